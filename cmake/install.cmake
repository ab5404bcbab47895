# What `cmake --install` puts where, in the GNU layout under the prefix:
#   bin/                      endure, endured, endure-train, endure-data (and links to the
#                             node programs, so every program is on the PATH)
#   lib/endure/node/{bin,lib} the node software: what a node's /opt/endure/bin and lib hold
#                             (endure-agent, endure-fsx, endure-auto-resume; auto_resume.so);
#                             endured hands it to local instances and hosts from here
#   lib/ARCH/slurm-wlm/       auto_resume.so, in Debian's Slurm PluginDir, so plugstack.conf
#                             may name it alone (a link into the node software)
#   LIBDIR/libendure.so*, LIBDIR/pkgconfig/endure.pc, include/endure/   the checkpoint API
#   lib/python3/dist-packages/endure/   `import endure` for Debian's python3 (the package's
#                             /usr; it finds libendure.so.0 through the dynamic loader)
#   lib/systemd/system/       endured.service and endure-agent.service
#   share/bash-completion/completions/endure, share/endure/examples/, share/doc/endure/
include(GNUInstallDirs)
# Installing (and CPack, which installs) takes the tree as built: it builds nothing first, so
# packaging never compiles, nor races a build running beside it.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
  GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(ENDURE_NODE_DIR lib/endure/node)

install(TARGETS endure endured endure-train endure-data RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS endure-agent endure-fsx endure-auto-resume endure-memstore RUNTIME DESTINATION ${ENDURE_NODE_DIR}/bin)
install(TARGETS auto_resume LIBRARY DESTINATION ${ENDURE_NODE_DIR}/lib)

# Relative links (the tree stays movable): LINK in DIR points at TARGET, a path under the prefix.
function(endure_install_link dir link target)
  file(RELATIVE_PATH relative /p/${dir} /p/${target})
  install(CODE "
    set(dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${dir}\")
    file(MAKE_DIRECTORY \"\${dir}\")
    file(CREATE_LINK \"${relative}\" \"\${dir}/${link}\" SYMBOLIC)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${dir}/${link}\")")
endfunction()
foreach(program endure-agent endure-fsx endure-auto-resume)
  endure_install_link(${CMAKE_INSTALL_BINDIR} ${program} ${ENDURE_NODE_DIR}/bin/${program})
endforeach()
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(ENDURE_SLURM_PLUGIN_DIR lib/${CMAKE_LIBRARY_ARCHITECTURE}/slurm-wlm)
else()
  set(ENDURE_SLURM_PLUGIN_DIR lib/slurm-wlm)
endif()
endure_install_link(${ENDURE_SLURM_PLUGIN_DIR} auto_resume.so ${ENDURE_NODE_DIR}/lib/auto_resume.so)

# The checkpoint API for programs outside this tree: the shared library, its headers (with
# the two of common/ that checkpoint.h includes) and endure.pc.
install(TARGETS endure_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/endure/checkpoint.h include/endure/checkpoint_c.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/endure)
install(FILES src/common/json.h src/common/result.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/endure/common)
# The Python package over that library's C API (python/endure), where Debian's python3
# looks for packages installed under /usr.
install(DIRECTORY python/endure DESTINATION lib/python3/dist-packages
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(RELATIVE_PATH ENDURE_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(cmake/endure.pc.in ${CMAKE_BINARY_DIR}/endure.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/endure.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The units. endured's names the endured of this prefix, so it is written at install time
# (CPack installs under its own prefix, /usr).
install(FILES packaging/systemd/endure-agent.service DESTINATION lib/systemd/system)
install(CODE "
  set(ENDURE_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
  configure_file(\"${CMAKE_SOURCE_DIR}/packaging/systemd/endured.service.in\"
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/endured.service\" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/endured.service\")")

install(FILES ${ENDURE_BASH_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# The scripts executable, as a node runs them (the tree keeps them 0644).
install(DIRECTORY examples/cluster examples/lifecycle examples/jobs
  DESTINATION ${CMAKE_INSTALL_DATADIR}/endure/examples
  PATTERN "*.sh" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
    WORLD_READ WORLD_EXECUTE
  PATTERN "*.sbatch" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
    WORLD_READ WORLD_EXECUTE)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
