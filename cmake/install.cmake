# What `make install` (and the .deb, cmake/package.cmake) puts where.
#
# The programs find their config, rules and CUDA module beside themselves
# (<bindir>/../etc/autoheal, <bindir>/../lib/autoheal) or else at /etc/autoheal
# (core/src/config.cpp FindConfigPath, core/src/diag/rule_files.cpp DefaultRulesDir,
# health/src/health_config.cpp ResolveCudaModule). So the config goes to /etc/autoheal when the
# prefix is /usr and to <prefix>/etc/autoheal otherwise: not GNUInstallDirs' /etc/opt/<...> for
# /opt prefixes, where the programs would not look. Decided at install time, so that
# `cmake --install --prefix` and cpack (prefix /usr) get it right whatever the build folder was
# configured with. Slurm's files go where Slurm reads them (SLURM_PLUGIN_DIR, SLURM_PLUGSTACK_DIR:
# absolute, whatever the prefix); the state and log folders are autoheal.yaml's defaults.
# Absolute destinations honour DESTDIR (file(INSTALL) prepends it).
set(AUTOHEAL_STATE_DIR /var/lib/autoheal)
set(AUTOHEAL_LOG_DIR /var/log/autoheal)
# autoheal-agent.service (agent/CMakeLists.txt): where Debian keeps packaged units.
set(AUTOHEAL_SYSTEMD_UNIT_DIR /lib/systemd/system CACHE PATH "Where make install puts the systemd units")

install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
        set(autoheal_config_dir /etc/autoheal)
    else()
        set(autoheal_config_dir \"\${CMAKE_INSTALL_PREFIX}/etc/autoheal\")
    endif()
    file(INSTALL DESTINATION \"\${autoheal_config_dir}\" TYPE FILE
         FILES \"${PROJECT_SOURCE_DIR}/etc/autoheal.yaml\")
    file(INSTALL DESTINATION \"\${autoheal_config_dir}\" TYPE DIRECTORY
         FILES \"${PROJECT_SOURCE_DIR}/etc/rules.d\" FILES_MATCHING PATTERN \"*.yaml\")
")

configure_file(etc/slurm/autoheal.conf.in ${CMAKE_BINARY_DIR}/generated/autoheal.conf @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/autoheal.conf DESTINATION ${SLURM_PLUGSTACK_DIR})

# Traversable by everyone: the job's user reads jobs/<job>/resume.json (docs/remediation.md).
set(autoheal_dir_permissions
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
install(DIRECTORY DESTINATION ${AUTOHEAL_STATE_DIR}
        DIRECTORY_PERMISSIONS ${autoheal_dir_permissions})
install(DIRECTORY DESTINATION ${AUTOHEAL_LOG_DIR}
        DIRECTORY_PERMISSIONS ${autoheal_dir_permissions})

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The JSON Schema of rule files, for editors (docs/rules.md).
install(FILES schema/rules.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/autoheal)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
