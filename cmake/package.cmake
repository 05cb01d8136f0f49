# `make deb`: a Debian package of what cmake/install.cmake installs, with prefix /usr (so the
# config is in /etc/autoheal), built by CPack.
#
# The plugins must match the Slurm they are loaded into: Slurm refuses a job_submit plugin whose
# major.minor.micro differs from its own (src/common/plugin.c), so the package depends on the
# Slurm release it was built against (slurm-wlm-basic-plugins owns Slurm's PluginDir and
# plugstack.conf.d, and every Slurm node has it). Library dependencies come from dpkg-shlibdeps.
file(STRINGS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h slurm_version_line
     REGEX "^#define SLURM_VERSION_NUMBER ")
string(REGEX REPLACE ".*(0x[0-9a-fA-F]+).*" "\\1" slurm_version_number "${slurm_version_line}")
math(EXPR slurm_major "(${slurm_version_number} >> 16) & 255")
math(EXPR slurm_minor "(${slurm_version_number} >> 8) & 255")
math(EXPR slurm_micro "${slurm_version_number} & 255")
math(EXPR slurm_next_micro "${slurm_micro} + 1")
if(slurm_minor LESS 10)
    set(slurm_minor "0${slurm_minor}")
endif()
set(AUTOHEAL_SLURM_VERSION "${slurm_major}.${slurm_minor}.${slurm_micro}")
set(slurm_next_version "${slurm_major}.${slurm_minor}.${slurm_next_micro}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME autoheal)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "autoheal")
set(CPACK_PACKAGE_CONTACT "autoheal maintainers <root@localhost>" CACHE STRING
    "Maintainer field of the .deb")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Automated GPU fault handling for Slurm clusters")
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "Slurm plugins (SPANK, job_submit), Prolog/Epilog/EpilogSlurmctld programs and the admin\n"
    "CLI autoheal: GPU health checks before jobs, diagnosis of failed jobs from kernel, NVML\n"
    "and job logs, rule-driven node remediation and requeue of jobs from their last checkpoint.\n"
    "Built for Slurm ${AUTOHEAL_SLURM_VERSION}.")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR})
# Installed with DESTDIR (so that absolute destinations, /etc, Slurm's folders and /var, land in
# the package) and this prefix, whatever the build folder was configured with.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # autoheal_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "slurm-wlm-basic-plugins (>= ${AUTOHEAL_SLURM_VERSION}), slurm-wlm-basic-plugins (<< ${slurm_next_version}~)")

# Every file under /etc is a conffile: an admin's edits survive upgrades.
file(GLOB shipped_rule_files RELATIVE ${PROJECT_SOURCE_DIR}/etc/rules.d CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/etc/rules.d/*.yaml)
set(conffiles "/etc/autoheal/autoheal.yaml\n${SLURM_PLUGSTACK_DIR}/autoheal.conf\n")
foreach(rule_file ${shipped_rule_files})
    string(APPEND conffiles "/etc/autoheal/rules.d/${rule_file}\n")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/generated/deb/conffiles "${conffiles}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/generated/deb/conffiles)

include(CPack)
