// autoheal-epilog — Epilog (slurmd, root, on every node of the job when it ends).
// For now it records what Slurm told it about the job and exits 0.
#include "autoheal/core/program.h"

int main() { return autoheal::ReportJobScript("autoheal-epilog", "epilog"); }
