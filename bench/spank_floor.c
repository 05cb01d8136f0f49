/* The floor of issue 11's submit cost: a SPANK plugin that registers the same five options as
 * spank_autoheal.so, with the same argument kinds, and does nothing else (no record, no checks,
 * no C++). bench/submit_bench.sh counts sbatch's instructions with it loaded: what Slurm itself
 * spends on any plugin with these options (loading it, merging its options into sbatch's getopt
 * tables, parsing them, copying the given ones into the job-control environment), which no
 * plugin can spend less than. Keep the names in step with plugin/spank/spank_options.cpp. */
#include <slurm/spank.h>

SPANK_PLUGIN(autoheal_floor, 1);

static int ignore_option(int val, const char *optarg, int remote)
{
    (void)val;
    (void)optarg;
    (void)remote;
    return 0;
}

static struct spank_option floor_options[] = {
    {"auto-resume", "N", "floor", 2, 1, ignore_option},
    {"ckpt-dir", "DIR", "floor", 1, 2, ignore_option},
    {"health-check", "quick|full|off", "floor", 1, 3, ignore_option},
    {"hang-timeout", "DURATION|off", "floor", 1, 4, ignore_option},
    {"flight-recorder", "on|off", "floor", 1, 5, ignore_option},
};

/* In sbatch (the allocator context) Slurm reads no static table: options are registered here. */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    for (unsigned i = 0; i < sizeof(floor_options) / sizeof(floor_options[0]); i++) {
        if (spank_option_register(sp, &floor_options[i]) != ESPANK_SUCCESS)
            return -1;
    }
    return 0;
}
