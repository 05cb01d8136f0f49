// libFuzzer target: the resume record (core/resume_record.h), state_dir/jobs/<job>/resume.json,
// which the SPANK plugin reads in a requeued job's tasks. A crash or a hand edit can leave any
// bytes there. Findings (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour or exception (the reader must never throw: it runs
//     inside slurmstepd);
//   - a record that does not survive serialize -> parse unchanged;
//   - a restart number outside int's range read as anything but the default 0.
#include <cstddef>
#include <cstdint>
#include <string>

#include "autoheal/core/resume_record.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;

namespace {

bool Same(const autoheal::ResumeRecord& a, const autoheal::ResumeRecord& b) {
    return a.restart == b.restart && a.cause == b.cause && a.explanation == b.explanation &&
           a.excluded == b.excluded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(autoheal::fuzz::AsText(data, size));
    auto parsed = autoheal::ResumeRecordFromJson(text);
    if (parsed) {
        const std::string json = autoheal::ResumeRecordToJson(*parsed);
        auto again = autoheal::ResumeRecordFromJson(json);
        if (!again) Fail("a serialized record does not parse: " + again.error());
        if (!Same(*parsed, *again)) Fail("record changed in serialize -> parse: " + json);
        if (autoheal::ResumeRecordToJson(*again) != json) Fail("serialization is not stable");
    }
    // The same bytes as field values: whatever a log line holds, the writer's JSON reads back,
    // with the restart number intact.
    autoheal::ResumeRecord r;
    r.restart = static_cast<int>(size) - 7;
    r.cause = text;
    r.explanation = text.substr(0, text.size() / 2);
    r.excluded = text.substr(text.size() / 2);
    auto back = autoheal::ResumeRecordFromJson(autoheal::ResumeRecordToJson(r));
    if (!back) Fail("a written record does not parse: " + back.error());
    if (back->restart != r.restart) Fail("restart number lost in a written record");
    if (back->cause.empty() != r.cause.empty()) Fail("a written record lost its cause");
    return 0;
}
