#!/usr/bin/env bash
# make lint: clang-format (check only) over every first-party C++ file, and clang-tidy (checks in
# .clang-tidy) over every first-party source: core/, os/, health/, remediation/, plugin/,
# prolog/, epilog/, cli/, tests/, bench/, and the headers they include from those folders.
# Exit 0 only when both are clean. clang-tidy runs one process per core (LINT_JOBS to change).
# LINT_TIDY=product leaves the tests and benches out of clang-tidy's share (CI's lint: they are
# 72 of its 186 files and most of its time, gtest's macros being heavy to check); the default,
# all, checks them too.
set -uo pipefail
build_dir=${1:-build}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${LINT_JOBS:-$(nproc)}
if [ ! -f "$build_dir/compile_commands.json" ]; then
    echo "autoheal: lint: $build_dir/compile_commands.json missing (configure first: make configure)" >&2
    exit 2
fi
# Not the .cu files: clang-format 14 splits CUDA's kernel launch brackets (<<<...>>>).
mapfile -t files < <(git ls-files '*.cpp' '*.h')
rc=0
echo "autoheal: lint: clang-format on ${#files[@]} files"
clang-format --dry-run --Werror "${files[@]}" || rc=1
# The job_submit plugin and the reboot request (remediation/src/slurm_reboot.cpp) include
# Slurm's internal C headers, which clang rejects as C++ (reserved user-defined literals); gcc
# builds them with -Wall -Wextra and no warnings. The fuzz
# targets are compiled only in build-san (make fuzz), and the CUDA module only where nvcc exists
# (its host file module.cpp only then), so build/'s compile database lacks them: a file missing
# from it is skipped rather than checked with guessed flags.
not_product=()
case ${LINT_TIDY:-all} in
    all) ;;
    product) not_product=(':!tests/*' ':!*/tests/*' ':!bench/*') ;;
    *) echo "autoheal: lint: LINT_TIDY must be all or product" >&2; exit 2 ;;
esac
mapfile -t candidates < <(git ls-files '*.cpp' ':!plugin/job_submit/*' ':!remediation/src/slurm_reboot.cpp' \
    ':!tests/fuzz/*' "${not_product[@]}")
sources=()
for f in "${candidates[@]}"; do
    grep -qF "\"file\": \"$PWD/$f\"" "$build_dir/compile_commands.json" && sources+=("$f")
done
# The test files are built with gcc's precompiled header (-include .../cmake_pch.hxx, whose .gch
# clang cannot read): clang-tidy reads a copy of the compile database without it, so each file is
# checked with the includes it names itself.
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
python3 - "$build_dir/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, re, sys
entries = json.load(open(sys.argv[1]))
for e in entries:
    e["command"] = re.sub(r" -Winvalid-pch| -include \S*cmake_pch\.hxx", "", e["command"])
json.dump(entries, open(sys.argv[2], "w"))
PY
echo "autoheal: lint: clang-tidy on ${#sources[@]} files (${#candidates[@]} first-party," \
     "$((${#candidates[@]} - ${#sources[@]})) not in $build_dir's compile database), $jobs at a time"
findings=$(printf '%s\n' "${sources[@]}" |
    xargs -P "$jobs" -n 4 clang-tidy -p "$db" --quiet 2>/dev/null |
    grep -E '(warning|error):')
if [ -n "$findings" ]; then
    echo "$findings" | sort -u
    rc=1
fi
exit $rc
