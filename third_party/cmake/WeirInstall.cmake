# What `cmake --install` puts into the prefix (docs/install.md):
#   lib/libweir_<layer>.so          one shared library per layer
#   include/weir/<layer>/*.h        their headers, generated ones included
#   include/weir/plugin.h(pp)       the custom op plugin ABI
#   bin/graph-runner
#   lib/cmake/Weir/                 WeirConfig.cmake: Weir::weir, Weir::<layer>, Weir::plugin
#   lib/pkgconfig/weir.pc
# Headers keep the source tree's layout under include/weir, so user code
# includes "core/graph.h" exactly as Weir does.

include(CMakePackageConfigHelpers)

set(WEIR_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/weir)
set(WEIR_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Weir)
set(weir_layers core ops passes runtime distributed ps frontend models)

# Weir::weir: every layer, what an application links.
add_library(weir INTERFACE)
target_link_libraries(weir INTERFACE weir_models weir_frontend weir_distributed weir_ps)
# Weir::plugin: only the C ABI's headers; a plugin links no Weir library.
add_library(weir_plugin INTERFACE)
target_include_directories(weir_plugin INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(weir_plugin PROPERTIES EXPORT_NAME plugin)
foreach(layer IN LISTS weir_layers)
  set_target_properties(weir_${layer} PROPERTIES EXPORT_NAME ${layer})
endforeach()

set(weir_layer_targets)
foreach(layer IN LISTS weir_layers)
  list(APPEND weir_layer_targets weir_${layer})
endforeach()
install(TARGETS ${weir_layer_targets} weir weir_plugin EXPORT WeirTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${WEIR_INSTALL_INCLUDEDIR})
install(TARGETS graph-runner RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

foreach(dir core ops passes runtime distributed frontend models)
  install(DIRECTORY ${dir}/ DESTINATION ${WEIR_INSTALL_INCLUDEDIR}/${dir} FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES include/weir/plugin.h include/weir/plugin.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/weir)
# Generated headers, which the build includes from its binary directory.
install(FILES ${PROJECT_BINARY_DIR}/core/proto/weir.pb.h DESTINATION ${WEIR_INSTALL_INCLUDEDIR}/core/proto)
install(FILES ${PROJECT_BINARY_DIR}/core/fbs/plan_generated.h DESTINATION ${WEIR_INSTALL_INCLUDEDIR}/core/fbs)
install(FILES ${PROJECT_BINARY_DIR}/frontend/strategy/strategy_file.pb.h
  DESTINATION ${WEIR_INSTALL_INCLUDEDIR}/frontend/strategy)
install(FILES ${PROJECT_BINARY_DIR}/distributed/ps/ps.pb.h ${PROJECT_BINARY_DIR}/distributed/ps/ps.grpc.pb.h
  DESTINATION ${WEIR_INSTALL_INCLUDEDIR}/distributed/ps)

install(EXPORT WeirTargets NAMESPACE Weir:: FILE WeirTargets.cmake DESTINATION ${WEIR_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/WeirConfig.cmake.in
  ${PROJECT_BINARY_DIR}/WeirConfig.cmake INSTALL_DESTINATION ${WEIR_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/WeirConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/WeirConfig.cmake ${PROJECT_BINARY_DIR}/WeirConfigVersion.cmake
  DESTINATION ${WEIR_INSTALL_CMAKEDIR})

# pkg-config: the same libraries for builds without CMake. Requires lists
# what Weir's public headers include (protobuf, spdlog with fmt); ONNX's
# messages ship no .pc file, so its library is named directly.
# The prefix is found from the .pc file's own place, so `cmake --install
# --prefix DIR` gives a correct file wherever DIR is.
file(RELATIVE_PATH WEIR_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/weir.pc.in ${PROJECT_BINARY_DIR}/weir.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/weir.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
