// autoheal-prolog — Prolog (slurmd, root, on every allocated node at allocation with
// PrologFlags=Alloc). For now it records what Slurm told it about the job and exits 0.
#include "autoheal/core/program.h"

int main() { return autoheal::ReportJobScript("autoheal-prolog", "prolog"); }
