// autoheal simulate's output (docs/report.md, "Simulation"): text for people, JSON, and a
// self-contained page in the report's style.
#pragma once

#include <string>

#include "autoheal/sim/simulator.h"

namespace autoheal::cli {

std::string SimulationText(const sim::SimResult& r);
std::string SimulationJson(const sim::SimResult& r);
std::string SimulationHtml(const sim::SimResult& r);

}  // namespace autoheal::cli
