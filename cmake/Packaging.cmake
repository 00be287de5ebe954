# Debian packages (CPack DEB, one per install component): `cpack -G DEB` in a build directory.
# Component `server`: the standard build produces `rdmastor`, the RDMA build `rdmastor-rdma`; both
# install /usr/bin/rdmastor, the same systemd unit and the same /etc/default/rdmastor (a conffile),
# and conflict with / replace / provide each other, so swapping one for the other keeps the
# configuration. Component `client`: `rdmastor-cli` / `rdmastor-cli-rdma`, /usr/bin/rdmastor-cli
# alone (no unit, no user). Component `python` (when the module is built): `python3-rdmastor` from the
# standard build, `python3-rdmastor-rdma` (verbs too; provides python3-rdmastor) from the RDMA
# build, installing the package `rdmastor` into /usr/lib/python3/dist-packages. Library
# dependencies come from dpkg-shlibdeps on the linked binaries.

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
# Every package gets /usr/share/doc/<package>/copyright and changelog.gz (Debian policy 12.5,
# 12.7; native packages: changelog.gz). The server package also ships the documentation: the
# README, every docs/*.md and bench/README.md, in the layout the README links them in.
set(_changelog_gz ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${_changelog_gz}
                   COMMAND gzip -9n -c ${CMAKE_SOURCE_DIR}/packaging/changelog > ${_changelog_gz}
                   DEPENDS ${CMAKE_SOURCE_DIR}/packaging/changelog VERBATIM)
add_custom_target(rdmastor_changelog ALL DEPENDS ${_changelog_gz})
function(rdmastor_package_docs component package)
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/copyright ${_changelog_gz}
          DESTINATION share/doc/${package} COMPONENT ${component})
endfunction()
if(RDMASTOR_RDMA)
  set(_cli_pkg rdmastor-cli-rdma)
  set(_cli_other rdmastor-cli)
else()
  set(_cli_pkg rdmastor-cli)
  set(_cli_other rdmastor-cli-rdma)
endif()
rdmastor_package_docs(server ${_pkg})
rdmastor_package_docs(client ${_cli_pkg})
file(GLOB _docs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION share/doc/${_pkg})
install(FILES ${_docs} DESTINATION share/doc/${_pkg}/docs)
install(FILES ${CMAKE_SOURCE_DIR}/bench/README.md DESTINATION share/doc/${_pkg}/bench)
# Both packages point the unit's Documentation= at /usr/share/doc/rdmastor.
if(RDMASTOR_RDMA)
  install(CODE "file(CREATE_LINK rdmastor-rdma
                     \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/share/doc/rdmastor\" SYMBOLIC)")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server client)
set(CPACK_PACKAGE_NAME rdmastor)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "rdmastor maintainers <dev@rdmastor.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_WARN_ON_ABSOLUTE_INSTALL_DESTINATION OFF)

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME ${_pkg})
set(CPACK_DEBIAN_SERVER_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_SERVER_DESCRIPTION "${_summary}")
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION net)
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "adduser")
# The client command line (rdmastor-cli) is a package of its own: a training node gets it without
# a server unit and a system user; a server host usually wants it too.
set(CPACK_DEBIAN_SERVER_PACKAGE_RECOMMENDS ${_cli_pkg})
set(CPACK_DEBIAN_SERVER_PACKAGE_CONFLICTS ${_other})
set(CPACK_DEBIAN_SERVER_PACKAGE_REPLACES ${_other})
set(CPACK_DEBIAN_SERVER_PACKAGE_PROVIDES ${_other})
# The environment file is the operator's: dpkg keeps local edits on upgrade and package swap.
file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "/etc/default/rdmastor\n")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/postinst
                                              ${CMAKE_SOURCE_DIR}/packaging/prerm
                                              ${CMAKE_SOURCE_DIR}/packaging/postrm
                                              ${CMAKE_BINARY_DIR}/packaging/conffiles)

set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME ${_cli_pkg})
set(CPACK_DEBIAN_CLIENT_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_CLIENT_DESCRIPTION
    "rdmastor-cli: S3 client command line with payloads over RDMA\n\
Makes buckets and moves objects to and from an S3 server (rdmastor or any other), with\n\
payloads over RDMA where the server offers it (--rdma), over HTTP otherwise. No server,\n\
no systemd unit, no system user.")
set(CPACK_DEBIAN_CLIENT_PACKAGE_SECTION net)
if(RDMASTOR_RDMA)
  set(CPACK_DEBIAN_CLIENT_PACKAGE_PROVIDES ${_cli_other})
endif()
set(CPACK_DEBIAN_CLIENT_PACKAGE_CONFLICTS ${_cli_other})
set(CPACK_DEBIAN_CLIENT_PACKAGE_REPLACES "${_cli_other}, rdmastor (<< 0.1.0-1~), rdmastor-rdma (<< 0.1.0-1~)")

if(TARGET rdmastor_python)
  list(APPEND CPACK_COMPONENTS_ALL python)
  if(RDMASTOR_RDMA)
    set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-rdmastor-rdma)
    set(CPACK_DEBIAN_PYTHON_PACKAGE_PROVIDES python3-rdmastor)
    set(CPACK_DEBIAN_PYTHON_PACKAGE_CONFLICTS python3-rdmastor)
    set(CPACK_DEBIAN_PYTHON_PACKAGE_REPLACES python3-rdmastor)
    set(_what "RDMA build: verbs, the soft fabric, HTTP")
  else()
    set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-rdmastor)
    set(CPACK_DEBIAN_PYTHON_PACKAGE_CONFLICTS python3-rdmastor-rdma)
    set(CPACK_DEBIAN_PYTHON_PACKAGE_REPLACES python3-rdmastor-rdma)
    set(_what "standard build: the soft fabric, HTTP")
  endif()
  set(CPACK_DEBIAN_PYTHON_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PYTHON_DESCRIPTION
      "Python client for rdmastor: S3 with payloads over RDMA into numpy and torch buffers\n\
The rdmastor package (import rdmastor): S3 requests signed like boto3, object payloads moved\n\
over RDMA straight into bytes, numpy arrays and CPU torch tensors (${_what});\n\
rdmastor.torch datasets and checkpoints; an fsspec filesystem (rdmastor://).")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  # The extension is built for one interpreter ABI (python3.X), as Debian's own modules state it.
  string(REPLACE "." ";" _pyv "${RDMASTOR_PYTHON_VERSION}")
  list(GET _pyv 0 _pymaj)
  list(GET _pyv 1 _pymin)
  math(EXPR _pynext "${_pymin} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= ${_pymaj}.${_pymin}~), python3 (<< ${_pymaj}.${_pynext}), python3-numpy")
  # rdmastor.torch and rdmastor.fsspec import these on use only; torch alone is hundreds of MiB.
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-torch, python3-fsspec, python3-tqdm")
  rdmastor_package_docs(python ${CPACK_DEBIAN_PYTHON_PACKAGE_NAME})
  set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/python/postinst
                                                ${CMAKE_SOURCE_DIR}/packaging/python/prerm)
endif()
include(CPack)
