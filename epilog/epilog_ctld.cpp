// autoheal-epilog-ctld — EpilogSlurmctld (slurmctld, once per job when it ends; starts before the
// node epilogs finish). For now it records what Slurm told it about the job and exits 0.
#include "autoheal/core/program.h"

int main() { return autoheal::ReportJobScript("autoheal-epilog-ctld", "epilog-ctld"); }
