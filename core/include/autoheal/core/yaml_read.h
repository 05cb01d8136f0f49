// Small helpers every strict YAML settings parser here shares: where a node is (for
// "file:line:column: ..." errors) and reading a scalar into a typed value without throwing.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <type_traits>

namespace autoheal {

// "source:line:column" of a node (1-based, as editors count).
inline std::string YamlWhere(const std::string& source, const YAML::Node& node) {
    const YAML::Mark m = node.Mark();
    return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// Reads a scalar node into `out`; false (and `out` unspecified) when it is not one or does not
// convert. A floating-point setting must be finite: YAML's .nan passes every range check
// (comparisons with NaN are false) and .inf overflows the conversions that follow.
template <typename T>
bool YamlRead(const YAML::Node& node, T* out) {
    if (!node.IsScalar() || !YAML::convert<T>::decode(node, *out)) return false;
    if constexpr (std::is_floating_point_v<T>) return std::isfinite(*out);
    return true;
}

}  // namespace autoheal
