# Compiler flags shared by every Weir target, applied through weir_set_options().

function(weir_set_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wcast-align -Wunused -Woverloaded-virtual -Wimplicit-fallthrough
      # Nothing reads errno after a math call; without this, every loop
      # with a sqrt (optimizer updates, norms) stays scalar.
      -fno-math-errno>
    # GCC 12 reports false -Wrestrict positives inside std::string
    # concatenation at -O3 (GCC bug 105329); clang has no such warning.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    # Weir's headers need no export macro (every symbol has default
    # visibility), so CMake's <target>_EXPORTS define is left out.
    set_target_properties(${target} PROPERTIES DEFINE_SYMBOL "")
  endif()
  if(WEIR_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

if(WEIR_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
endif()

if(WEIR_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WEIR_FUZZ needs clang (libFuzzer); configure with the 'sanitize' preset")
  endif()
  if(NOT WEIR_SANITIZE)
    # The coverage callbacks the instrumented objects call come with the
    # sanitizer runtime, which every binary of such a build links.
    message(FATAL_ERROR "WEIR_FUZZ needs WEIR_SANITIZE (the 'sanitize' preset has both)")
  endif()
  # Coverage instrumentation for libFuzzer in every object; only the fuzz
  # targets link libFuzzer's main (-fsanitize=fuzzer, fuzz/CMakeLists.txt).
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()

if(WEIR_SANITIZE_THREAD)
  # OpenMP's runtime (libgomp) is not instrumented: its barriers look like
  # races to TSan. tsan.supp (at the repository root) silences those; run as
  # TSAN_OPTIONS=suppressions=$PWD/tsan.supp.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
endif()
