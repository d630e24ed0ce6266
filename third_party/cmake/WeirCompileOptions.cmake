# Compiler flags shared by every Weir target, applied through weir_set_options().

function(weir_set_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wcast-align -Wunused -Woverloaded-virtual -Wimplicit-fallthrough
      # GCC 12 reports false -Wrestrict positives inside std::string
      # concatenation at -O3 (GCC bug 105329).
      -Wno-restrict
      # Nothing reads errno after a math call; without this, every loop
      # with a sqrt (optimizer updates, norms) stays scalar.
      -fno-math-errno>)
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

if(WEIR_SANITIZE_THREAD)
  # OpenMP's runtime (libgomp) is not instrumented: its barriers look like
  # races to TSan. tsan.supp (at the repository root) silences those; run as
  # TSAN_OPTIONS=suppressions=$PWD/tsan.supp.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
endif()
