// libFuzzer target: the JSON records the remediation epilogs read back from state_dir
// (remediation/job_records.h): the node epilog's NodeReport (<node>.epilog.json) and the
// controller's DecisionRecord (decision.json). A crash mid-write (on a file system without
// atomic rename) or a hand edit can leave anything there; the readers are lenient by contract.
// Findings (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour or exception (a mistyped field must not throw);
//   - a record that does not survive serialize -> parse -> serialize unchanged;
//   - a NodeReport built from arbitrary bytes (log lines are arbitrary bytes) whose JSON does
//     not parse back with the same number of lines.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/job_records.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;
namespace rem = autoheal::remediation;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(autoheal::fuzz::AsText(data, size));

    if (auto report = rem::NodeReportFromJson(text)) {
        if (report->node.empty()) Fail("a NodeReport without a node was accepted");
        const std::string json = rem::NodeReportToJson(*report);
        auto again = rem::NodeReportFromJson(json);
        if (!again) Fail("a serialized NodeReport does not parse: " + again.error());
        if (rem::NodeReportToJson(*again) != json) {
            Fail("NodeReport changed in serialize -> parse: " + json);
        }
    }
    if (auto decision = rem::DecisionRecordFromJson(text)) {
        const std::string json = rem::DecisionRecordToJson(*decision);
        auto again = rem::DecisionRecordFromJson(json);
        if (!again) Fail("a serialized DecisionRecord does not parse: " + again.error());
        if (rem::DecisionRecordToJson(*again) != json) {
            Fail("DecisionRecord changed in serialize -> parse: " + json);
        }
    }

    // The bytes as evidence items of a report being written.
    const std::vector<std::string> lines = autoheal::fuzz::Lines(text);
    rem::NodeReport r;
    r.node = "gpu-node-07";
    r.job = lines.empty() ? "" : lines.front();
    r.restart = static_cast<int>(size % 1000);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        autoheal::diag::Evidence e;
        e.signature = "xid";
        e.line = i + 1;
        e.text = lines[i];
        e.SetField("xid", lines[i]);
        autoheal::diag::AddEvidence(&r.evidence, "kernel", std::move(e));
    }
    r.gpus.push_back({text, text, "1650", "NVIDIA H100"});
    auto back = rem::NodeReportFromJson(rem::NodeReportToJson(r));
    if (!back) Fail("a written NodeReport does not parse: " + back.error());
    if (back->evidence.items.size() != r.evidence.items.size() || back->gpus.size() != 1 ||
        back->restart != r.restart) {
        Fail("a written NodeReport lost evidence or fields");
    }
    rem::DecisionRecord d;
    d.explanation = text;
    d.culprits = lines;
    d.facts.auto_resume = static_cast<int>(size);
    auto dback = rem::DecisionRecordFromJson(rem::DecisionRecordToJson(d));
    if (!dback) Fail("a written DecisionRecord does not parse: " + dback.error());
    if (dback->culprits.size() != d.culprits.size() ||
        dback->facts.auto_resume != d.facts.auto_resume) {
        Fail("a written DecisionRecord lost culprits or auto_resume");
    }
    return 0;
}
