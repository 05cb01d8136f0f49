// autoheal config check | print-slurm
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "autoheal/core/config.h"
#include "autoheal/core/program.h"
#include "autoheal/remediation/settings.h"
#include "cli_common.h"

namespace autoheal::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kConfigUsage =
    "usage: autoheal config check [FILE]\n"
    "       autoheal config print-slurm\n"
    "  check: validates autoheal.yaml (default: the file the programs read: $AUTOHEAL_CONFIG,\n"
    "  else <prefix>/etc/autoheal/autoheal.yaml beside this program, else\n"
    "  /etc/autoheal/autoheal.yaml); each problem as file:line:column. Exit 0: valid;\n"
    "  1: invalid or unreadable; 2: usage.\n"
    "  print-slurm: the slurm.conf lines autoheal needs, with the paths of this installation.\n";

int Check(const std::vector<std::string>& args) {
    std::string path;
    for (const std::string& a : args) {
        if (a == "-h" || a == "--help") {
            std::fputs(kConfigUsage, stdout);
            return 0;
        }
        if ((!a.empty() && a[0] == '-') || !path.empty()) {
            std::fprintf(stderr, "autoheal: config check: unexpected argument '%s'\n%s", a.c_str(),
                         kConfigUsage);
            return 2;
        }
        path = a;
    }
    if (path.empty()) path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), SelfExePath());

    auto loaded = remediation::LoadSettingsFile(path);
    std::vector<std::string> problems;
    if (!loaded) {
        // One problem per line: each section is parsed on its own, so one run names a problem
        // in each.
        const std::string& p = loaded.error();
        std::size_t start = 0;
        for (std::size_t nl; (nl = p.find('\n', start)) != std::string::npos; start = nl + 1) {
            problems.push_back(p.substr(start, nl - start));
        }
        problems.push_back(p.substr(start));
    }
    std::printf("%s: %s\n", path.c_str(), problems.empty() ? "Ok" : "Invalid");
    for (const std::string& p : problems) std::printf("  %s\n", p.c_str());
    return problems.empty() ? 0 : 1;
}

// The first of `dirs` holding `name`, else the last of `dirs` (printed with a warning).
struct Found {
    fs::path path;
    bool exists = false;
};
Found FindIn(const std::vector<fs::path>& dirs, const std::string& name) {
    std::error_code ec;
    for (const fs::path& d : dirs) {
        if (fs::exists(d / name, ec)) return {(d / name).lexically_normal(), true};
    }
    return {(dirs.back() / name).lexically_normal(), false};
}

int PrintSlurm(const std::vector<std::string>& args) {
    for (const std::string& a : args) {
        if (a == "-h" || a == "--help") {
            std::fputs(kConfigUsage, stdout);
            return 0;
        }
        std::fprintf(stderr, "autoheal: config print-slurm: unexpected argument '%s'\n%s",
                     a.c_str(), kConfigUsage);
        return 2;
    }
    const std::string self = SelfExePath();
    if (self.empty()) {
        std::fprintf(stderr, "autoheal: config print-slurm: cannot read /proc/self/exe\n");
        return 1;
    }
    // Installed: autoheal in <prefix>/bin, the Slurm programs in <prefix>/sbin. The build
    // folder has them all in bin/ and the plugins in plugins/.
    const fs::path bin = fs::path(self).parent_path();
    const fs::path prefix = bin.parent_path();
    const std::vector<fs::path> program_dirs{bin, prefix / "sbin"};
    // The plugins: the build folder's (bin/../plugins), else where make install puts them.
    const Found plugin =
        FindIn({prefix / "plugins", AUTOHEAL_SLURM_PLUGIN_DIR}, "job_submit_autoheal.so");
    const fs::path plugin_dir = plugin.path.parent_path();

    std::vector<std::string> missing;
    auto program = [&](const std::string& name) {
        Found f = FindIn(program_dirs, name);
        if (!f.exists) missing.push_back(f.path.string());
        return f.path.string();
    };
    std::printf(
        "# slurm.conf lines for autoheal %s (%s); keep slurm.conf the same on every node.\n",
        AUTOHEAL_VERSION, self.c_str());
    std::printf("# Where slurm.conf already sets one of these, merge (comma-separated lists).\n");
    std::printf("JobSubmitPlugins=autoheal\n");
    std::printf("# The prolog runs on every allocated node when the job is allocated.\n");
    std::printf("PrologFlags=Alloc\n");
    std::printf("Prolog=%s\n", program("autoheal-prolog").c_str());
    std::printf("Epilog=%s\n", program("autoheal-epilog").c_str());
    std::printf("EpilogSlurmctld=%s\n", program("autoheal-epilog-ctld").c_str());
    std::printf(
        "# Bounds the prolog's health checks and EpilogSlurmctld's wait for the node "
        "epilogs.\n");
    std::printf("PrologEpilogTimeout=120\n");
    std::printf("# A node that fails the prolog is drained and the job requeued, not held.\n");
    std::printf("SchedulerParameters=nohold_on_prolog_fail\n");
    if (plugin_dir != fs::path(AUTOHEAL_SLURM_DEFAULT_PLUGIN_DIR).lexically_normal()) {
        std::printf("# autoheal's plugins are not in Slurm's default plugin folder.\n");
        std::printf("PluginDir=%s:%s\n", AUTOHEAL_SLURM_DEFAULT_PLUGIN_DIR,
                    plugin_dir.string().c_str());
    }
    if (!plugin.exists) missing.push_back(plugin.path.string());
    std::printf(
        "# The reboot action asks Slurm to reboot nodes (as `scontrol reboot` does); slurmd\n"
        "# reboots only by running RebootProgram: without one the node is taken out of\n"
        "# service but never rebooted. Set your site's, for example:\n"
        "#RebootProgram=/usr/sbin/reboot\n");
    std::printf(
        "# SPANK plugin (sbatch/srun options), every node: make install puts this line in\n"
        "# %s, which Debian's /etc/slurm/plugstack.conf includes;\n"
        "# elsewhere add it to the file PlugStackConfig names (default plugstack.conf):\n"
        "#   required %s max_auto_resume=10 default_auto_resume=3\n",
        AUTOHEAL_PLUGSTACK_SNIPPET, (plugin_dir / "spank_autoheal.so").string().c_str());
    for (const std::string& m : missing) {
        std::fprintf(stderr, "autoheal: config print-slurm: warning: %s does not exist\n",
                     m.c_str());
    }
    return 0;
}

}  // namespace

int ConfigCommand(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::fputs(kConfigUsage, stderr);
        return 2;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "check") return Check(rest);
    if (args[0] == "print-slurm") return PrintSlurm(rest);
    if (args[0] == "-h" || args[0] == "--help") {
        std::fputs(kConfigUsage, stdout);
        return 0;
    }
    std::fprintf(stderr, "autoheal: config: unknown subcommand '%s'\n%s", args[0].c_str(),
                 kConfigUsage);
    return 2;
}

}  // namespace autoheal::cli
