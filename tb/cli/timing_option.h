#pragma once
// `--timing`: the core's timing (model/core/core_timing.h), by preset name (uniform, trn2,
// trn1) or from a JSON file (model/README.md, "Timing presets"), for example
//   {"preset": "trn2", "clock": {"divide": {"vector": 4}}, "throttle": {"enabled": false}}
// The file starts from its preset (default uniform) and changes the keys it names; a wrong key,
// type or value is an error naming the file and the key.
#include <string>

#include "model/core/core_timing.h"

namespace ncore::cli {

model::CoreTiming load_timing(const std::string& preset_or_file);

}  // namespace ncore::cli
