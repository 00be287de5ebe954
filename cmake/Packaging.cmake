# Debian packages (CPack DEB): `cpack -G DEB` in a build directory. The standard build produces
# `rdmastor`, the RDMA build `rdmastor-rdma`; both install /usr/bin/rdmastor, the same systemd unit
# and the same /etc/default/rdmastor (a conffile), and conflict with / replace / provide each
# other, so swapping one for the other keeps the configuration. Library dependencies come from
# dpkg-shlibdeps on the linked binary.

install(FILES ${CMAKE_SOURCE_DIR}/systemd/rdmastor.service DESTINATION lib/systemd/system)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/rdmastor.default DESTINATION /etc/default
        RENAME rdmastor)
if(RDMASTOR_RDMA)
  set(_pkg rdmastor-rdma)
  set(_other rdmastor)
  set(_summary "S3-compatible object server with an RDMA data path (RDMA build)")
else()
  set(_pkg rdmastor)
  set(_other rdmastor-rdma)
  set(_summary "S3-compatible object server with an RDMA data path (standard build, TCP)")
endif()
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/settings.md
              ${CMAKE_SOURCE_DIR}/docs/runbook.md ${CMAKE_SOURCE_DIR}/docs/architecture.md
        DESTINATION share/doc/${_pkg} OPTIONAL)
# Both packages point the unit's Documentation= at /usr/share/doc/rdmastor.
if(RDMASTOR_RDMA)
  install(CODE "file(CREATE_LINK rdmastor-rdma
                     \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/share/doc/rdmastor\" SYMBOLIC)")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${_pkg})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "rdmastor maintainers <dev@rdmastor.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${_summary}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONFLICTS ${_other})
set(CPACK_DEBIAN_PACKAGE_REPLACES ${_other})
set(CPACK_DEBIAN_PACKAGE_PROVIDES ${_other})
# The environment file is the operator's: dpkg keeps local edits on upgrade and package swap.
file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "/etc/default/rdmastor\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/postinst
                                       ${CMAKE_SOURCE_DIR}/packaging/prerm
                                       ${CMAKE_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_WARN_ON_ABSOLUTE_INSTALL_DESTINATION OFF)
include(CPack)
