"""Distributed training from Python: real processes under `graph-runner launch` and mpirun on 127.0.0.1,
compared with one process on the whole batch."""

import os
import shutil
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest

import launched_training

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(command, timeout=180):
    """Runs a job in its own process group; on timeout the whole group is killed (no process left behind)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.environ.get("PYTHONPATH", ""), HERE]))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"{' '.join(command)} did not finish in {timeout} s:\n{output}")
    assert process.returncode == 0, f"{' '.join(command)} exited {process.returncode}:\n{output}"
    return output


@pytest.fixture
def single_process(tmp_path):
    out = tmp_path / "single"
    out.mkdir()
    launched_training.train(str(out), 8, None)
    return out


def check_same_training(job_dir, single_dir):
    np.testing.assert_allclose(np.load(job_dir / "losses.npy"), np.load(single_dir / "losses.npy"), rtol=1e-5)
    np.testing.assert_allclose(np.load(job_dir / "fc1_weight.npy"), np.load(single_dir / "fc1_weight.npy"),
                               rtol=1e-4, atol=1e-6)
    assert (job_dir / "ckpt.npz").exists()


def test_two_processes_under_graph_runner_launch_match_one_process(graph_runner, tmp_path, single_process):
    out = tmp_path / "launch"
    out.mkdir()
    output = run_job([graph_runner, "launch", "-n", "2", "--master-port", str(free_port()), "--",
                      sys.executable, os.path.join(HERE, "launched_training.py"), str(out), "8"])
    assert "[rank 1] world: <weir.World rank 1 of 2>" in output, output
    check_same_training(out, single_process)


def test_two_processes_under_mpirun_match_one_process(tmp_path, single_process):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("no mpirun (scripts/setup.sh installs openmpi-bin)")
    out = tmp_path / "mpi"
    out.mkdir()
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    output = run_job([mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none", "-x", "PYTHONPATH",
                      "-x", f"WEIR_MASTER_PORT={free_port()}",
                      sys.executable, os.path.join(HERE, "launched_training.py"), str(out), "8"])
    assert "world: <weir.World rank 1 of 2>" in output, output
    check_same_training(out, single_process)


def test_a_rank_that_never_comes_fails_the_rendezvous_with_a_clear_error(tmp_path):
    env = dict(os.environ, WEIR_RANK="0", WEIR_WORLD_SIZE="2", WEIR_MASTER_ADDR="127.0.0.1",
               WEIR_MASTER_PORT=str(free_port()))
    done = subprocess.run([sys.executable, "-c", "import weir; weir.launched_world(timeout_s=2)"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "weir._weir.Error: rank 0: " in done.stderr and "rank 1 never arrived" in done.stderr, done.stderr
