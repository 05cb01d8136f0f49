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
#include <memory>
#include <memory_resource>
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
    // A container's children live in the tree's own arena (a dump builds millions of small
    // lists and dicts: allocating each from the heap and freeing it was a quarter of the time).
    using Items = std::pmr::vector<Ref>;                // kList (lists, tuples, sets)
    using Map = std::pmr::vector<std::pair<Ref, Ref>>;  // kDict, in the order written

    Ref root() const { return root_; }
    std::size_t size() const { return nodes_.size(); }
    Kind kind(Ref r) const { return nodes_[r].kind; }
    // kInt and kBool (0/1); 0 for other kinds (an int beyond 64 bits is refused by the readers).
    std::int64_t Int(Ref r) const {
        return kind(r) == Kind::kInt || kind(r) == Kind::kBool ? nodes_[r].value : 0;
    }
    double Float(Ref r) const;
    // kString (UTF-8 as written) and kBytes; empty for other kinds.
    std::string_view Str(Ref r) const;
    // kList's items, kDict's pairs; empty for other kinds.
    const Items& ItemsOf(Ref r) const;
    const Map& MapOf(Ref r) const;

    // The value of `key` (a string) in the dict `dict`; false when it is no dict or lacks it.
    bool Find(Ref dict, std::string_view key, Ref* value) const;

    // Builders, for the readers. A string is copied into the tree.
    Ref AddScalar(Kind kind, std::int64_t value);
    Ref AddFloat(double value);
    Ref AddString(Kind kind, std::string_view s);
    Ref AddContainer(Kind kind);  // kList or kDict, empty
    Items& MutItems(Ref r) { return lists_[nodes_[r].aux]; }
    Map& MutMap(Ref r) { return dicts_[nodes_[r].aux]; }
    void set_root(Ref r) { root_ = r; }
    void Reserve(std::size_t n) { nodes_.reserve(n); }

  private:
    // 16 bytes a value: one dump holds hundreds of thousands of them.
    struct Node {
        Kind kind = Kind::kNone;
        std::uint32_t aux = 0;   // a string's length; a container's index in lists_/dicts_
        std::int64_t value = 0;  // an int or bool; a float's bits; a string's offset in strings_
    };
    std::vector<Node> nodes_;
    std::string strings_;
    // Declared before the containers that allocate from it; a unique_ptr, so that a moved tree's
    // containers keep pointing at a live arena.
    std::unique_ptr<std::pmr::monotonic_buffer_resource> arena_ =
        std::make_unique<std::pmr::monotonic_buffer_resource>();
    std::vector<Items> lists_;
    std::vector<Map> dicts_;
    Ref root_ = 0;
};

// A pickle (protocol 0 to 5). Errors name the opcode and its offset
// ("opcode GLOBAL (0x63) at byte 2 imports or calls: refused").
Result<DataTree> ReadPickle(std::string_view bytes, const DataLimits& limits = {});

// A JSON document (nesting checked before it is parsed).
Result<DataTree> ReadJsonData(std::string_view text, const DataLimits& limits = {});

}  // namespace autoheal::diag
