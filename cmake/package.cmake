# The Debian package (scripts/package.sh runs CPack on the built tree): what cmake --install
# puts under /usr, its dependencies, endured's unit enabled and started by the maintainer
# scripts in packaging/debian/ (and ldconfig's trigger for libendure), and what Debian's policy asks of every package (copyright,
# changelog, stripped programs, root-owned files with standard modes).
install(FILES packaging/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(CODE "
  set(doc \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR}\")
  execute_process(COMMAND gzip -9n -c \"${CMAKE_SOURCE_DIR}/packaging/debian/changelog\"
    OUTPUT_FILE \"\${doc}/changelog.gz\" COMMAND_ERROR_IS_FATAL ANY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${doc}/changelog.gz\")")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME endure)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "endure developers <endure@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "resilient training clusters on Slurm")
# CPack indents each line of it by one space.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "endure creates Slurm clusters from a declarative spec, runs lifecycle scripts
on every node, watches every node's health, replaces faulty nodes and resumes
interrupted training from its latest checkpoint. This package holds the
controller (endured, a systemd service), the endure CLI, the node agent, the
auto-resume SPANK plugin for srun, the reference trainer and the checkpoint
engine as a shared library.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The libraries the programs link (libc, SQLite, OpenSSL, OpenBLAS, ...) come from
# dpkg-shlibdeps; the programs endure runs, from this list.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "slurm-wlm, slurm-client, munge, fuse3, python3, procps, iproute2")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssh-client, sshfs")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/debian/postinst
  ${CMAKE_SOURCE_DIR}/packaging/debian/prerm ${CMAKE_SOURCE_DIR}/packaging/debian/postrm
  ${CMAKE_SOURCE_DIR}/packaging/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
# gzip, not xz: a package of the built tree in seconds.
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
include(CPack)
