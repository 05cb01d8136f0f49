# Shared by tests/install/*.sh: what a /usr install must contain, and the test helpers.
# Needs: source plugin_dir plugstack_dir cuda (set by the caller).

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect_in() {  # expect_in WHAT TEXT NEEDLE
    grep -qF -- "$3" <<<"$2" || fail "$1: expected '$3' in: $2"
}
finish() {  # finish NAME SUMMARY
    if [ "$failures" -gt 0 ]; then
        echo "$1: $failures failure(s)" >&2
        exit 1
    fi
    echo "$1: ok ($2)"
}

# The files of an install with prefix /usr, one per line, relative to the root; folders end in /.
expected_paths() {
    local rule
    printf '%s\n' usr/bin/autoheal usr/sbin/autoheal-prolog usr/sbin/autoheal-epilog \
        usr/sbin/autoheal-epilog-ctld usr/sbin/autoheal-agent lib/systemd/system/autoheal-agent.service \
        "${plugin_dir#/}/spank_autoheal.so" "${plugin_dir#/}/job_submit_autoheal.so" \
        etc/autoheal/autoheal.yaml "${plugstack_dir#/}/autoheal.conf" \
        var/lib/autoheal/ var/log/autoheal/ usr/share/doc/autoheal/README.md
    [ "$cuda" = 1 ] && echo usr/lib/autoheal/libautoheal_cuda_checks.so
    for rule in "$source"/etc/rules.d/*.yaml; do
        echo "etc/autoheal/rules.d/$(basename "$rule")"
    done
}

# The conffiles of the package: everything under /etc.
expected_conffiles() {
    expected_paths | grep '^etc/' | sed 's#^#/#'
}
