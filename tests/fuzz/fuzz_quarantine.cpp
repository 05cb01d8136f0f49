// libFuzzer target: the quarantine file (core/submit_policy.h), read by the job_submit plugin's
// reloader thread inside slurmctld and by AddToQuarantine before it rewrites the file.
// Per input: ParseQuarantineJson (what ReadQuarantineFile does after reading the file); when it
// parses, QuarantineToJson and parse again, then DecideOnSubmit for a job near those nodes.
// Findings (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour or exception (nothing may escape into slurmctld);
//   - an accepted entry with a node name IsValidQuarantineNodeName refuses;
//   - a list that does not survive serialize -> parse unchanged;
//   - a decision that excludes a node it must not (expired, requested, already excluded, twice,
//     or not quarantined at all), or misses one it must exclude.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "autoheal/core/submit_policy.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(autoheal::fuzz::AsText(data, size));
    auto nodes = autoheal::ParseQuarantineJson(text, "quarantine.json");
    if (!nodes) {
        if (!autoheal::fuzz::StartsWith(nodes.error(), "quarantine.json: ")) {
            Fail("an error that does not name the file: " + nodes.error());
        }
        return 0;
    }
    for (const auto& q : *nodes) {
        if (!autoheal::IsValidQuarantineNodeName(q.node))
            Fail("accepted node name '" + q.node + "'");
    }
    const std::string json = autoheal::QuarantineToJson(*nodes);
    auto again = autoheal::ParseQuarantineJson(json, "quarantine.json");
    if (!again) Fail("a written quarantine list does not parse: " + again.error());
    if (*again != *nodes) Fail("quarantine list changed in serialize -> parse: " + json);

    // A job that asks for the first node and excludes the second, decided at a time between
    // the entries' `until`s.
    autoheal::SubmitPolicy policy;
    policy.quarantine = *nodes;
    autoheal::SubmitContext context;
    if (!nodes->empty()) context.req_nodes.push_back(nodes->front().node);
    if (nodes->size() > 1) context.exc_nodes.push_back((*nodes)[1].node);
    const std::int64_t now = nodes->empty() ? 0 : (*nodes)[nodes->size() / 2].until;
    autoheal::JobOptions options;
    options.auto_resume = 3;
    const autoheal::SubmitDecision d = autoheal::DecideOnSubmit(options, policy, context, now);
    if (d.refused() || !d.force_requeue) Fail("an auto-resume job within the cap was refused");
    std::set<std::string> want;
    for (const auto& q : *nodes) {
        if (q.until > now &&
            std::find(context.req_nodes.begin(), context.req_nodes.end(), q.node) ==
                context.req_nodes.end() &&
            std::find(context.exc_nodes.begin(), context.exc_nodes.end(), q.node) ==
                context.exc_nodes.end()) {
            want.insert(q.node);
        }
    }
    const std::set<std::string> have(d.exclude.begin(), d.exclude.end());
    if (have.size() != d.exclude.size()) Fail("a node excluded twice");
    if (have != want) Fail("excluded nodes differ from the live, unrequested quarantine");
    return 0;
}
