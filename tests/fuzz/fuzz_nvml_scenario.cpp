// libFuzzer target: the fake NVML's scenario files (tests/fakes/SCENARIO.md), parsed by
// ParseScenario (tests/fakes/fake_nvml/scenario.h) when nvmlInit_v2 loads a scenario.
// A bad scenario must make nvmlInit_v2 fail with a message, never crash the prolog or the
// test that loaded the fake. Findings (libFuzzer reports each as a crash):
//   - any crash, leak or undefined behaviour (a number cast out of its type's range included),
//     or an exception that is not a std::exception (the library's Guard catches only those
//     with a message);
//   - an accepted scenario whose values the fake's calls cannot honour: more NVLinks than
//     kMaxNvLinks, a hang longer than kMaxHangSeconds or not finite, an init_error NVML's enum
//     cannot hold, GPU indexes out of order, a pci_bus_id that does not read back as the
//     parsed domain, bus, device and function;
//   - two parses of one text that disagree.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "fuzz_common.h"
#include "scenario.h"

using autoheal::fuzz::Fail;
namespace fake = autoheal::fake_nvml;

namespace {

bool Parse(const std::string& text, fake::Scenario* out, std::string* error) {
    try {
        *out = fake::ParseScenario(text);
        return true;
    } catch (const std::exception& e) {
        *error = e.what();
        if (error->empty()) Fail("an exception without a message");
        return false;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(autoheal::fuzz::AsText(data, size));
    fake::Scenario s;
    std::string error;
    const bool ok = Parse(text, &s, &error);
    fake::Scenario s2;
    std::string error2;
    if (Parse(text, &s2, &error2) != ok || error != error2) Fail("two parses disagree");
    if (!ok) return 0;
    if (s.gpus.size() != s2.gpus.size()) Fail("two parses give different GPU counts");
    if (s.init_error && (*s.init_error < 0 || *s.init_error > NVML_ERROR_UNKNOWN)) {
        Fail("init_error out of NVML's range");
    }
    if (s.hang && !(std::isfinite(s.hang->seconds) && s.hang->seconds >= 0 &&
                    s.hang->seconds <= fake::kMaxHangSeconds)) {
        Fail("hang seconds out of range");
    }
    for (std::size_t i = 0; i < s.gpus.size(); ++i) {
        const fake::Gpu& g = s.gpus[i];
        if (g.index != i) Fail("GPU index out of order");
        if (g.links.size() > fake::kMaxNvLinks) Fail("too many NVLinks");
        unsigned d = 0, b = 0, v = 0, f = 0;
        if (std::sscanf(g.pci_bus_id.c_str(), "%x:%x:%x.%x", &d, &b, &v, &f) != 4 ||
            d != g.pci_domain || b != g.pci_bus || v != g.pci_device || f != g.pci_function) {
            Fail("pci_bus_id '" + g.pci_bus_id + "' does not match its parsed fields");
        }
    }
    return 0;
}
