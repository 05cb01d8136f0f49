// libFuzzer target: what a user or an admin types that reaches the SPANK plugin: plugstack.conf
// arguments (ParsePluginArgs) and the sbatch/srun option values (ParseAutoResume, ParseCkptDir,
// ParseHealthCheck, ParseHangTimeout, ParseFlightRecorder), then the trip the options take through
// the job-control environment (ToJobControlEnv -> LookupEnvArray / JobOptionsFromEnv), as the
// plugin, job_submit, the prolog and the epilogs use them. These are the pure functions the
// plugin's callbacks call.
//
// Input: line 1 plugstack.conf arguments (split on spaces), line 2 the --auto-resume value
// ("-" alone: the option without a value), line 3 --ckpt-dir, line 4 the submit directory,
// line 5 --health-check; further lines are extra NAME=VALUE environment entries.
// Findings (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour or exception (these run inside sbatch, slurmstepd
//     and, through JobOptionsFromEnv, slurmctld);
//   - limits out of order (1 <= default <= max <= 1000), an argument dropped without a problem;
//   - an accepted --auto-resume outside [1, max], a bare one other than the default;
//   - an accepted --ckpt-dir that is not absolute, is '/', ends in '/', is too long, holds a
//     control character, or is not a fixed point (parsing it again changes it);
//   - a --health-check word accepted that does not name its tier, a --flight-recorder word other
//     than on/off accepted;
//   - options that do not come back unchanged through the job-control environment, with or
//     without the SPANK_ prefix, whatever other entries the environment holds.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoheal/core/job_options.h"
#include "autoheal/core/plugin_args.h"
#include "autoheal/core/submit_policy.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;

namespace {

std::vector<std::string> SplitSpaces(const std::string& line) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < line.size()) {
        const std::size_t sp = line.find(' ', pos);
        const std::size_t end = sp == std::string::npos ? line.size() : sp;
        if (end > pos) out.push_back(line.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

void CheckCkptDir(const std::string& dir) {
    if (dir.empty() || dir.front() != '/') Fail("ckpt dir not absolute: " + dir);
    if (dir == "/" || dir.back() == '/') Fail("ckpt dir '/' or with a trailing '/': " + dir);
    if (dir.size() > autoheal::kMaxCkptDirLength) Fail("ckpt dir too long");
    for (unsigned char c : dir) {
        if (c < 0x20 || c == 0x7f) Fail("control character in ckpt dir");
    }
    auto again = autoheal::ParseCkptDir(dir, "");
    if (!again || *again != dir) Fail("ckpt dir is not a fixed point: " + dir);
}

void CheckOptions(const autoheal::JobOptions& o) {
    if (o.auto_resume && *o.auto_resume < 1) Fail("auto_resume < 1 read back");
    if (o.ckpt_dir) CheckCkptDir(*o.ckpt_dir);
    if (o.hang_timeout &&
        (*o.hang_timeout < 0 || *o.hang_timeout > autoheal::kMaxHangTimeoutSeconds)) {
        Fail("hang_timeout out of range read back");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> lines = autoheal::fuzz::Lines(autoheal::fuzz::AsText(data, size));
    lines.resize(std::max<std::size_t>(lines.size(), 5));

    // plugstack.conf
    const std::vector<std::string> argv = SplitSpaces(lines[0]);
    const autoheal::PluginArgsParse plugin = autoheal::ParsePluginArgs(argv);
    const autoheal::OptionLimits& limits = plugin.args.limits;
    if (!(1 <= limits.default_auto_resume && limits.default_auto_resume <= limits.max_auto_resume &&
          limits.max_auto_resume <= 1000)) {
        Fail("plugin limits out of order");
    }
    if (plugin.problems.size() > argv.size() + 1) Fail("more problems than arguments");

    autoheal::JobOptions options;
    // --auto-resume
    const std::optional<std::string_view> ar =
        lines[1] == "-" ? std::nullopt : std::optional<std::string_view>(lines[1]);
    if (auto n = autoheal::ParseAutoResume(ar, limits)) {
        if (*n < 1 || *n > limits.max_auto_resume) Fail("auto-resume out of range accepted");
        if (!ar && *n != limits.default_auto_resume) Fail("bare --auto-resume is not the default");
        options.auto_resume = *n;
    } else if (!ar) {
        Fail("bare --auto-resume refused");
    }
    // --ckpt-dir
    if (auto dir = autoheal::ParseCkptDir(lines[2], lines[3])) {
        CheckCkptDir(*dir);
        options.ckpt_dir = *dir;
    }
    // --health-check
    if (auto tier = autoheal::ParseHealthCheck(lines[4])) {
        if (autoheal::HealthTierName(*tier) != lines[4]) Fail("health tier word mismatch");
        options.health_check = *tier;
    }
    // --flight-recorder, from the same text as --health-check's
    if (auto on = autoheal::ParseFlightRecorder(lines[4])) {
        if (lines[4] != (*on ? "on" : "off")) Fail("flight recorder word mismatch");
        options.flight_recorder = *on;
    }

    // --hang-timeout, from the same text as --auto-resume's
    if (auto t = autoheal::ParseHangTimeout(lines[1])) {
        if (*t < 0 || *t > autoheal::kMaxHangTimeoutSeconds)
            Fail("hang timeout out of range accepted");
        options.hang_timeout = *t;
    }

    // Through the job-control environment: recorded entries first, then the input's own.
    const auto env = autoheal::ToJobControlEnv(options);
    for (const std::string prefix : {"", "SPANK_"}) {
        std::vector<std::string> entries;
        for (const auto& [name, value] : env) entries.push_back(prefix + name + "=" + value);
        for (std::size_t i = 5; i < lines.size(); ++i) entries.push_back(lines[i]);
        std::vector<const char*> envp;
        for (const auto& e : entries) envp.push_back(e.c_str());
        envp.push_back(nullptr);
        std::vector<std::string> problems;
        const autoheal::JobOptions back = autoheal::JobOptionsFromEnv(
            [&](std::string_view name) {
                return autoheal::LookupEnvArray(envp.data(), envp.size(), name);
            },
            prefix, &problems);
        CheckOptions(back);
        if (options.auto_resume && back.auto_resume != options.auto_resume) {
            Fail("auto_resume changed through the environment");
        }
        if (options.ckpt_dir && back.ckpt_dir != options.ckpt_dir) {
            Fail("ckpt_dir changed through the environment");
        }
        if (options.health_check && back.health_check != options.health_check) {
            Fail("health_check changed through the environment");
        }
        if (options.hang_timeout && back.hang_timeout != options.hang_timeout) {
            Fail("hang_timeout changed through the environment");
        }
        if (options.flight_recorder && back.flight_recorder != options.flight_recorder) {
            Fail("flight_recorder changed through the environment");
        }
        // The recorded entry comes first, so the input's own entries never shadow it.
        if (!env.empty() && (back != options || !problems.empty())) {
            Fail("options changed through the environment");
        }
    }
    // The raw lines as a hand-set record: whatever is accepted must be valid; a record that
    // does not split is one problem and no option.
    std::vector<std::string> problems;
    const std::string record =
        "auto_resume=" + lines[1] + ";health_check=" + lines[4] + ";ckpt_dir=" + lines[2];
    const autoheal::JobOptions raw = autoheal::JobOptionsFromEnv(
        [&](std::string_view name) -> std::optional<std::string> {
            if (name == autoheal::kEnvOptions) return record;
            return std::nullopt;
        },
        "", &problems);
    CheckOptions(raw);
    const std::size_t accepted = (raw.auto_resume ? 1 : 0) + (raw.ckpt_dir ? 1 : 0) +
                                 (raw.health_check ? 1 : 0) + (raw.hang_timeout ? 1 : 0) +
                                 (raw.flight_recorder ? 1 : 0);
    const bool malformed =
        problems.size() == 1 &&
        problems[0].rfind(std::string(autoheal::kEnvOptions) + ": malformed record at ", 0) == 0;
    // ckpt_dir comes last and takes the rest of the record (a path may hold ';'): an earlier
    // value with a ';' in it ends its field there and may swallow the fields after it, or start
    // hang_timeout= and flight_recorder= fields of its own (five fields at most).
    const bool split_clean =
        lines[1].find(';') == std::string::npos && lines[4].find(';') == std::string::npos;
    if (malformed
            ? accepted != 0
            : (split_clean ? problems.size() + accepted != 3
                           : problems.size() + accepted > 5 || problems.size() + accepted == 0)) {
        Fail("a record value neither accepted nor reported");
    }

    // What job_submit decides with these options under the plugin's cap.
    autoheal::SubmitPolicy policy;
    policy.max_auto_resume = limits.max_auto_resume;
    const auto decision = autoheal::DecideOnSubmit(options, policy, {}, 0);
    if (decision.refused()) Fail("job_submit refused options the plugin accepted");
    if (decision.force_requeue != options.auto_resume.has_value()) Fail("requeue not forced");
    return 0;
}
