// The exception firewall for every entry point that Slurm calls (SPANK callbacks, job_submit).
// Nothing may cross the C boundary: a C++ exception escaping into slurmctld, slurmd, slurmstepd
// or sbatch would abort the process. Our own bugs fail open: the caller gives the return code
// that lets Slurm carry on as if autoheal were absent.
#pragma once

#include <exception>
#include <utility>

namespace autoheal::plugin {

using GuardLogFn = void (*)(const char* where, const char* what);

// Runs fn() and returns its result; on any exception logs it through `log` and returns
// `fail_open`.
template <typename Fn>
int CallGuarded(const char* where, int fail_open, GuardLogFn log, Fn&& fn) noexcept {
    try {
        return std::forward<Fn>(fn)();
    } catch (const std::exception& e) {
        log(where, e.what());
    } catch (...) {
        log(where, "unknown exception");
    }
    return fail_open;
}

}  // namespace autoheal::plugin
