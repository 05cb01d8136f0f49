#include "autoheal/diag/flight_recorder.h"

#include <gtest/gtest.h>

#include <string>

namespace autoheal::diag {
namespace {

const std::string kFixtures = std::string(AUTOHEAL_SOURCE_DIR) + "/tests/fixtures/flight_recorder";

std::string Bytes(std::initializer_list<int> b) {
    std::string s;
    for (int c : b) s += static_cast<char>(c);
    return s;
}

TEST(FlightRecorder, ReadsTheHangFixtureWithItsNodeLayout) {
    const FrFolder folder = ReadFrFolder(kFixtures + "/hang");
    EXPECT_TRUE(folder.problems.empty()) << folder.problems.front();
    ASSERT_EQ(folder.dumps.size(), 8u);
    EXPECT_EQ(folder.rank_nodes.at(5), "node2");
    EXPECT_EQ(folder.rank_nodes.at(0), "node1");
    const FrDump* d5 = nullptr;
    for (const FrDump& d : folder.dumps) {
        if (d.rank == 5) d5 = &d;
    }
    ASSERT_NE(d5, nullptr);
    EXPECT_EQ(d5->version, "2.4");
    EXPECT_EQ(d5->pg_config.at("0").ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(d5->pg_status.at(0).last_completed, 41);
    ASSERT_EQ(d5->entries.size(), 16u);
    EXPECT_EQ(d5->entries.back().collective_seq_id, 41);
    EXPECT_EQ(d5->entries.back().state, FrState::kCompleted);
    EXPECT_EQ(d5->Text(d5->entries.back().profiling_name), "nccl:all_reduce");
    EXPECT_EQ(d5->Text(d5->entries.back().pg_name), "0");
    EXPECT_EQ(d5->Text(d5->entries.back().input_sizes), "[[1024,1024]]");
    EXPECT_GT(d5->entries.back().time_created_ns, std::int64_t{1} << 60);  // LONG1
}

TEST(FlightRecorder, NamesTheRankThatNeverEnteredTheCollective) {
    const FrFolder folder = ReadFrFolder(kFixtures + "/hang");
    const auto findings = AnalyzeFlightRecorder(folder.dumps);
    ASSERT_EQ(findings.size(), 1u);
    const FrFinding& f = findings[0];
    EXPECT_EQ(f.kind, FrFinding::Kind::kHang);
    EXPECT_EQ(f.ranks, std::vector<int>{5});
    EXPECT_EQ(f.seq, 42);
    EXPECT_EQ(f.op, "nccl:all_reduce");
    EXPECT_EQ(f.why, "never-entered");
    EXPECT_EQ(f.waiting, 7);
    EXPECT_EQ(f.members, 8);

    EvidenceSet set;
    AddFlightRecorderEvidence(findings, folder.rank_nodes, "flight-recorder", &set);
    ASSERT_EQ(set.items.size(), 1u);
    const Evidence& e = set.items[0];
    EXPECT_EQ(e.signature, "nccl-fr-culprit");
    EXPECT_EQ(e.text, "rank 5 on node2 never entered ALLREDUCE #42 (pg 0)");
    EXPECT_EQ(e.Field("rank"), "5");
    EXPECT_EQ(e.Field("host"), "node2");
    EXPECT_EQ(e.Field("op"), "ALLREDUCE");
    EXPECT_EQ(e.Field("waiting"), "7");
    EXPECT_EQ(e.Field("members"), "8");
    EXPECT_EQ(set.Count("nccl-fr-culprit"), 1u);
}

TEST(FlightRecorder, AMissingDumpIsTheSuspectOnlyWhenEveryOtherRankWaits) {
    FrFolder folder = ReadFrFolder(kFixtures + "/agree");
    ASSERT_EQ(folder.dumps.size(), 4u);
    EXPECT_TRUE(AnalyzeFlightRecorder(folder.dumps).empty());  // all wait: the fabric
    folder.dumps.erase(folder.dumps.begin() + 1);              // rank 1 wrote nothing
    const auto findings = AnalyzeFlightRecorder(folder.dumps);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
    EXPECT_EQ(findings[0].why, "no-dump");
}

TEST(FlightRecorder, ADifferentCollectiveAtOneSequenceNumberIsADesync) {
    const FrFolder folder = ReadFrFolder(kFixtures + "/desync");
    const auto findings = AnalyzeFlightRecorder(folder.dumps);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].kind, FrFinding::Kind::kDesync);
    EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
    EXPECT_EQ(findings[0].seq, 12);
    EXPECT_EQ(findings[0].op, "nccl:all_reduce");
    EXPECT_EQ(findings[0].other_op, "nccl:broadcast");
    EvidenceSet set;
    AddFlightRecorderEvidence(findings, {}, "fr", &set);
    EXPECT_EQ(set.items[0].signature, "nccl-fr-desync");
    EXPECT_EQ(set.items[0].text,
              "rank 2 ran BROADCAST where the other ranks ran ALLREDUCE #12 (pg 0)");
}

TEST(FlightRecorder, ReadsTheJsonFormAndARankStuckInAnEarlierCollective) {
    const FrFolder folder = ReadFrFolder(kFixtures + "/json");
    ASSERT_EQ(folder.dumps.size(), 4u);
    EXPECT_EQ(folder.dumps[0].pg_status.at(0).last_enqueued, 20);  // "20" in JSON
    const auto findings = AnalyzeFlightRecorder(folder.dumps);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].ranks, std::vector<int>{3});
    EXPECT_EQ(findings[0].why, "not-completed");
    EXPECT_EQ(findings[0].seq, 20);
}

TEST(FlightRecorder, RefusesAPickleThatImportsAndCalls) {
    const FrFolder folder = ReadFrFolder(kFixtures + "/evil");
    EXPECT_TRUE(folder.dumps.empty());
    ASSERT_EQ(folder.problems.size(), 1u);
    EXPECT_NE(folder.problems[0].find("opcode GLOBAL (0x63) at byte 2 imports or calls: refused"),
              std::string::npos)
        << folder.problems[0];
}

TEST(Pickle, RefusesEveryOpcodeThatImportsCallsOrFetches) {
    for (int op : std::initializer_list<int>{'c', 0x93, 'R', 'b', 'i', 'o', 0x81, 0x92, 0x82, 0x83,
                                             0x84, 'P', 'Q', 0x97, 0x98}) {
        // PROTO 2, an empty dict and a string on the stack, then the opcode.
        const std::string bytes = Bytes({0x80, 2, '}', 0x8c, 1, 'x', op, '.'});
        auto tree = ReadPickle(bytes);
        ASSERT_FALSE(tree.ok()) << op;
        EXPECT_NE(tree.error().find("imports or calls: refused"), std::string::npos)
            << tree.error();
    }
}

TEST(Pickle, ReadsDataOpcodesOfEveryProtocol) {
    // Protocol 0: MARK, INT, text STRING, LIST, DICT with SETITEM, PUT/GET.
    auto p0 = ReadPickle("(dp0\nS'a'\np1\nI42\nsS'b'\np2\n(I1\nI01\nF1.5\nlp3\ns.");
    ASSERT_TRUE(p0.ok()) << p0.error();
    const DataTree& t = *p0;
    DataTree::Ref a = 0, b = 0;
    ASSERT_TRUE(t.Find(t.root(), "a", &a));
    EXPECT_EQ(t.Int(a), 42);
    ASSERT_TRUE(t.Find(t.root(), "b", &b));
    const auto& items = t.ItemsOf(b);
    ASSERT_EQ(items.size(), 3u);
    EXPECT_EQ(t.kind(items[1]), DataTree::Kind::kBool);
    EXPECT_DOUBLE_EQ(t.Float(items[2]), 1.5);
    // Negative LONG1 and BININT.
    auto neg = ReadPickle(Bytes({0x80, 2, 0x8a, 1, 0xff, '.'}));
    ASSERT_TRUE(neg.ok());
    EXPECT_EQ(neg->Int(neg->root()), -1);
    auto big = ReadPickle(Bytes({0x80, 2, 0x8a, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, '.'}));
    EXPECT_FALSE(big.ok());
}

TEST(Pickle, ItemsAddedToContainersInTurnKeepTheirOrder) {
    // (a, b) with a = [1]; b = [2]; a.append(3): MARK, EMPTY_LIST, BINPUT 0, BININT1 1, APPEND,
    // EMPTY_LIST, BININT1 2, APPEND, BINGET 0, BININT1 3, APPEND, POP, TUPLE.
    auto tree = ReadPickle(Bytes({0x80, 2,   '(', ']', 'q', 0, 'K', 1,   'a', ']', 'K',
                                  2,    'a', 'h', 0,   'K', 3, 'a', '0', 't', '.'}));
    ASSERT_TRUE(tree.ok()) << tree.error();
    const auto pair = tree->ItemsOf(tree->root());
    ASSERT_EQ(pair.size(), 2u);
    std::vector<std::int64_t> a, b;
    for (DataTree::Ref r : tree->ItemsOf(pair[0])) a.push_back(tree->Int(r));
    for (DataTree::Ref r : tree->ItemsOf(pair[1])) b.push_back(tree->Int(r));
    EXPECT_EQ(a, (std::vector<std::int64_t>{1, 3}));
    EXPECT_EQ(b, (std::vector<std::int64_t>{2}));
}

TEST(Pickle, AListThatHoldsItselfNeitherLoopsNorLeaks) {
    // EMPTY_LIST, BINPUT 0, BINGET 0, APPEND: l = []; l.append(l)
    auto tree = ReadPickle(Bytes({0x80, 2, ']', 'q', 0, 'h', 0, 'a', '.'}));
    ASSERT_TRUE(tree.ok()) << tree.error();
    EXPECT_EQ(tree->ItemsOf(tree->root())[0], tree->root());
    auto dump = ParseFrDump(Bytes(
        {0x80, 2, '}', 'q', 0, 0x8c, 7, 'e', 'n', 't', 'r', 'i', 'e', 's', 'h', 0, 's', '.'}));
    ASSERT_TRUE(dump.ok()) << dump.error();  // {"entries": itself}: read as no entries
    EXPECT_TRUE(dump->entries.empty());
}

TEST(Pickle, BoundsNestingNodesAndTruncation) {
    EXPECT_FALSE(ReadPickle(std::string(100, '(') + ".").ok());
    DataLimits few;
    few.max_nodes = 3;
    EXPECT_FALSE(ReadPickle(Bytes({0x80, 2, ']', ']', ']', ']', '0', '0', '0', '.'}), few).ok());
    EXPECT_FALSE(ReadPickle(Bytes({0x80, 2, 'X', 0xff, 0xff, 0xff, 0x7f, 'a'})).ok());
    EXPECT_FALSE(ReadPickle(Bytes({0x80, 2, ']'})).ok());  // no STOP
    EXPECT_FALSE(ReadJsonData(std::string(100, '[') + std::string(100, ']')).ok());
    EXPECT_TRUE(ReadJsonData("[[[1]]]").ok());
}

TEST(Pickle, ATupleBeyondTheItemLimitIsRefusedWhereItIsBuilt) {
    // BININT1 1, BININT1 2, TUPLE2 with room for one item: refused at the TUPLE2, by its limit.
    DataLimits one;
    one.max_nodes = 1;
    auto tree = ReadPickle(Bytes({0x80, 2, 'K', 1, 'K', 2, 0x86, '.'}), one);
    ASSERT_FALSE(tree.ok());
    EXPECT_NE(tree.error().find("more than the item limit at byte 6"), std::string::npos)
        << tree.error();
}

TEST(FlightRecorder, RankFromTheFileName) {
    EXPECT_EQ(FrRankFromFileName("nccl_trace_rank_13"), 13);
    EXPECT_EQ(FrRankFromFileName("rank_7.json"), 7);
    EXPECT_EQ(FrRankFromFileName("nccl_trace_rank_"), std::nullopt);
    EXPECT_EQ(FrRankFromFileName("13"), std::nullopt);
    EXPECT_EQ(FrRankFromFileName("nccl_trace_rank_0.pipe"), std::nullopt);
}

}  // namespace
}  // namespace autoheal::diag
