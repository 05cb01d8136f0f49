// Data written by another program (a PyTorch flight-recorder dump), read as plain data: a tree of
// None, bools, ints, floats, strings, bytes, lists and dicts, held in one arena. Two readers fill
// it: a restricted reader of Python's pickle protocol (0-5) that accepts only the opcodes that
// build data and refuses every opcode that imports or calls (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
// INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID, out-of-band buffers), and a JSON
// reader. Never Python's unpickler: nothing read here runs code.
//
// Bounded: the input size, the number of nodes, the memo and the nesting a caller walks are
// capped (DataLimits), and the arena owns every node, so a memo that makes a list contain itself
// neither leaks nor loops (walkers bound their depth).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::diag {

struct DataLimits {
    std::size_t max_bytes = std::size_t{256} << 20;  // the input
    std::size_t max_nodes = 16'000'000;              // values built
    std::size_t max_memo = 4'000'000;                // pickle memo slots
    std::size_t max_depth = 64;                      // JSON nesting, pickle MARK nesting
};

class DataTree {
  public:
    enum class Kind : std::uint8_t { kNone, kBool, kInt, kFloat, kString, kBytes, kList, kDict };
    using Ref = std::uint32_t;
    struct Node {
        Kind kind = Kind::kNone;
        std::int64_t i = 0;  // kBool (0/1), kInt (an int beyond 64 bits is refused)
        double f = 0;
        std::string s;                         // kString (UTF-8 as written), kBytes
        std::vector<Ref> items;                // kList (lists, tuples, sets)
        std::vector<std::pair<Ref, Ref>> map;  // kDict, in the order written
    };

    Ref root() const { return root_; }
    const Node& at(Ref r) const { return nodes_[r]; }
    std::size_t size() const { return nodes_.size(); }

    // The value of `key` (a string) in the dict `r`; nullptr when `r` is no dict or lacks it.
    const Node* Find(Ref dict, std::string_view key) const;
    Ref FindRef(Ref dict, std::string_view key, bool* found) const;

    // Builders, for the readers.
    Ref Add(Node node) {
        nodes_.push_back(std::move(node));
        return static_cast<Ref>(nodes_.size() - 1);
    }
    Node& mut(Ref r) { return nodes_[r]; }
    void Reserve(std::size_t n) { nodes_.reserve(n); }
    void set_root(Ref r) { root_ = r; }

  private:
    std::vector<Node> nodes_;
    Ref root_ = 0;
};

// A pickle (protocol 0 to 5). Errors name the opcode and its offset
// ("opcode GLOBAL (0x63) at byte 2 imports or calls: refused").
Result<DataTree> ReadPickle(std::string_view bytes, const DataLimits& limits = {});

// A JSON document (nesting checked before it is parsed).
Result<DataTree> ReadJsonData(std::string_view text, const DataLimits& limits = {});

}  // namespace autoheal::diag
