// Small helpers every strict YAML settings parser here shares: where a node is (for
// "file:line:column: ..." errors) and reading a scalar into a typed value without throwing.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace autoheal {

// "source:line:column" of a node (1-based, as editors count).
inline std::string YamlWhere(const std::string& source, const YAML::Node& node) {
    const YAML::Mark m = node.Mark();
    return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// Reads a scalar node into `out`; false (and `out` unspecified) when it is not one or does not
// convert.
template <typename T>
bool YamlRead(const YAML::Node& node, T* out) {
    return node.IsScalar() && YAML::convert<T>::decode(node, *out);
}

}  // namespace autoheal
