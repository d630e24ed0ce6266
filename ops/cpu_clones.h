// WEIR_CPU_CLONES: compile a hot loop for AVX-512, AVX2 and baseline x86-64,
// the variant chosen once at load time. The build targets baseline x86-64,
// so without it our own loops are SSE2.
//
//   WEIR_CPU_CLONES void sum_rows_f32(const float* in, int64_t rows, ...);
//
// The choice is an IFUNC whose resolver the dynamic loader runs while
// relocating the library, before a sanitizer runtime has initialised. Under
// ThreadSanitizer the resolver is instrumented and that crashes every
// binary at start-up, so sanitized builds compile the baseline alone (they
// measure correctness, not speed).
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define WEIR_NO_CPU_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || !defined(__x86_64__)
#define WEIR_NO_CPU_CLONES 1
#endif

#if defined(WEIR_NO_CPU_CLONES)
#define WEIR_CPU_CLONES
#else
#define WEIR_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
