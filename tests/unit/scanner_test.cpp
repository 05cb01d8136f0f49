// The scanner: every matching line, right line numbers, named fields, bounded memory, and the
// same answers whichever path (Hyperscan prefilter or RE2 line by line) a pattern takes.
#include "autoheal/diag/scanner.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

namespace autoheal::diag {
namespace {

SignatureDef Sig(std::string name, std::string regex) {
    SignatureDef s;
    s.name = std::move(name);
    s.regex = std::move(regex);
    return s;
}

std::shared_ptr<const Scanner> Build(const std::vector<SignatureDef>& sigs,
                                     ScanLimits limits = {}) {
    auto r = Scanner::Build(sigs, limits);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    return *r;
}

TEST(Scanner, FindsLinesWithFieldsAndLineNumbers) {
    auto scanner = Build({Sig("xid", R"(NVRM: Xid \(PCI:(?P<pci>[^)]+)\): (?P<xid>\d+))"),
                          Sig("oom", "CUDA out of memory")});
    EvidenceSet set;
    scanner->ScanText(
        "boot\n[1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1\nnoise\r\nCUDA out of memory x\n"
        "NVRM: Xid (PCI:0000:3c:00): 48, a\nNVRM: Xid (PCI:0000:3c:00): 48, a",
        "log", &set);
    ASSERT_EQ(set.items.size(), 4u);
    EXPECT_EQ(set.items[0].line, 2u);
    EXPECT_EQ(set.items[0].Field("pci"), "0000:3b:00");
    EXPECT_EQ(set.items[0].Field("xid"), "79");
    EXPECT_EQ(set.items[1].signature, "oom");
    EXPECT_EQ(set.items[1].line, 4u);
    EXPECT_EQ(set.items[3].line, 6u);  // last line without a newline
    EXPECT_EQ(set.lines, 6u);
    EXPECT_EQ(set.Count("xid"), 3u);
}

TEST(Scanner, ReadsPastQuoteMarksColoursAndIndentation) {
    auto scanner = Build({Sig("state", R"(^\s*State: (?P<state>Down|Active)\s*$)"),
                          Sig("err", "^RuntimeError: (?P<what>.*)")});
    EvidenceSet set;
    scanner->ScanText("> CA 'mlx5_7'\n>         State: Down\n\x1b[31mRuntimeError: boom\x1b[0m\n",
                      "paste", &set);
    ASSERT_EQ(set.items.size(), 2u);
    EXPECT_EQ(set.items[0].Field("state"), "Down");
    EXPECT_EQ(set.items[0].line, 2u);
    EXPECT_EQ(set.items[1].Field("what"), "boom");
    EXPECT_EQ(set.items[1].text, "RuntimeError: boom");
}

// A kernel record relayed by an alert is evidence in pasted text, as that record; in a node's
// kernel log it is the relaying program's words.
TEST(Scanner, RelayedKernelRecordsCountOnlyInPastedText) {
    auto scanner = Build({Sig("xid", R"(NVRM: Xid \(PCI:(?P<pci>[^)]+)\): (?P<xid>\d+))")});
    const std::string alert =
        "Xid errors on instance: ip-1, Error: May 29 01:37:38 ip-1 kernel: [257087.812628] "
        "NVRM: Xid (PCI:0000:90:1c): 64, x\n";
    EvidenceSet pasted;
    scanner->ScanText(alert, "paste", &pasted);
    ASSERT_EQ(pasted.items.size(), 1u);
    EXPECT_EQ(pasted.items[0].Field("xid"), "64");
    EXPECT_EQ(pasted.items[0].text.rfind("May 29 01:37:38 ip-1 kernel: ", 0), 0u);
    EvidenceSet kernel;
    scanner->ScanText(alert, "kernel", &kernel, InputKind::kKernelLog);
    EXPECT_TRUE(kernel.items.empty());
}

TEST(Scanner, OneEvidencePerSignatureAndLine) {
    auto scanner = Build({Sig("x", "ab"), Sig("y", "b")});
    EvidenceSet set;
    scanner->ScanText("ab ab ab\n", "log", &set);
    ASSERT_EQ(set.items.size(), 2u);
    EXPECT_EQ(set.Count("x"), 1u);
}

TEST(Scanner, CapsEvidencePerSignatureButCountsAll) {
    ScanLimits limits;
    limits.per_signature_cap = 3;
    auto scanner = Build({Sig("e", "error")}, limits);
    std::string text;
    for (int i = 0; i < 100; ++i) text += "an error here\n";
    EvidenceSet set;
    scanner->ScanText(text, "log", &set);
    EXPECT_EQ(set.items.size(), 3u);
    EXPECT_EQ(set.Count("e"), 100u);
}

TEST(Scanner, AnchorsWorkPerLine) {
    auto scanner = Build({Sig("exc", R"(^(?P<exc>\w+Error): )")});
    EvidenceSet set;
    scanner->ScanText("x ValueError: no\nValueError: yes\n", "log", &set);
    ASSERT_EQ(set.items.size(), 1u);
    EXPECT_EQ(set.items[0].line, 2u);
}

// A line's start is also where its own text starts: after a logger's prefix, a pdsh host (the
// evidence's host) or an srun --label task number (no host). Blanks, a word before a colon and
// a quotation inside a line are no such start; the pattern that takes the line-by-line path
// (\pL) reads the same.
TEST(Scanner, AnchorsAlsoHoldPastALinesPrefixOrLabel) {
    auto scanner = Build({Sig("state", R"(^\s*State: (?P<state>Down|Active)\s*$)"),
                          Sig("exc", R"(^(?P<exc>\pL+Error): )")});
    EvidenceSet set;
    scanner->ScanText(
        "gpu07:         State: Down\n"                          // 1: pdsh
        "  3: ValueError: x\n"                                  // 2: srun --label
        "Dec  1 10:00:00 gpu08 healthcheck[42]: State: Down\n"  // 3: syslog
        "    ValueError: quoted\n"                              // 4: indented: a quotation
        "RuntimeError: ValueError: chained\n"                   // 5: at the start already
        "Cause: State: Down\n"                                  // 6: a word is no label
        "see State: Down\n",                                    // 7
        "paste", &set);
    ASSERT_EQ(set.items.size(), 4u);
    EXPECT_EQ(set.items[0].line, 1u);
    EXPECT_EQ(set.items[0].Field("state"), "Down");
    EXPECT_EQ(set.items[0].Field("host"), "gpu07");
    EXPECT_EQ(set.items[1].line, 2u);
    EXPECT_EQ(set.items[1].Field("exc"), "ValueError");
    EXPECT_FALSE(set.items[1].Field("host"));
    EXPECT_EQ(set.items[2].line, 3u);
    EXPECT_EQ(set.items[3].line, 5u);
    EXPECT_EQ(set.items[3].Field("exc"), "RuntimeError");
}

// Behind a collector's time (kubectl logs --timestamps) the blanks past the one after it are the
// line's own indentation: an indented tool's line matches as it would alone, an indented
// exception is still a quotation.
TEST(Scanner, AnchorsKeepALinesIndentationBehindACollectorsTime) {
    auto scanner = Build({Sig("state", R"(^\s+State\s*: (?P<state>Down|Active)\s*$)"),
                          Sig("exc", R"(^(?P<exc>\pL+Error): )")});
    EvidenceSet set;
    scanner->ScanText(
        "2026-12-06T02:20:26.123456789Z         State: Down\n"  // 1: indented
        "2026-12-06T02:20:26.123456789Z State: Active\n"        // 2: not indented
        "2026-12-06T02:20:26.123456789Z     ValueError: x\n"    // 3: a quotation
        "2026-12-06T02:20:26.123456789Z ValueError: raised\n",  // 4
        "paste", &set);
    ASSERT_EQ(set.items.size(), 2u);
    EXPECT_EQ(set.items[0].line, 1u);
    EXPECT_EQ(set.items[0].Field("state"), "Down");
    EXPECT_EQ(set.items[1].line, 4u);
}

TEST(Scanner, StreamsFilesInChunksWithCorrectLineNumbers) {
    ScanLimits limits;
    limits.chunk_bytes = 64;  // force many chunks and lines cut at chunk edges
    auto scanner = Build({Sig("hit", R"(fault (?P<n>\d+))")}, limits);
    char path[] = "/tmp/autoheal-scanner-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    std::string text;
    for (int i = 1; i <= 500; ++i) {
        text += (i % 50 == 0) ? "a fault " + std::to_string(i) + "\n"
                              : "normal line number " + std::to_string(i) + "\n";
    }
    text += std::string(200, 'z') + " fault 999 in a line longer than a chunk\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    lseek(fd, 0, SEEK_SET);
    EvidenceSet set;
    ASSERT_TRUE(scanner->ScanFd(fd, path, &set).ok());
    close(fd);
    unlink(path);
    ASSERT_EQ(set.items.size(), 11u);
    for (std::size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(set.items[i].line, (i + 1) * 50);
        EXPECT_EQ(set.items[i].Field("n"), std::to_string((i + 1) * 50));
    }
    // The over-long line is scanned in pieces and keeps its own line number.
    EXPECT_EQ(set.items[10].line, 501u);
    EXPECT_EQ(set.items[10].Field("n"), "999");
    EXPECT_EQ(set.lines, 501u);
    EXPECT_EQ(set.bytes, text.size());
}

// Large inputs are scanned by worker threads and merged in order: the result must be the same
// as a single-threaded scan, caps and line numbers included.
TEST(Scanner, ThreadedScanEqualsSingleThreaded) {
    std::string text;
    for (int i = 1; i <= 5000; ++i) {
        if (i % 7 == 0) {
            text += "NVRM: Xid (PCI:0000:3b:00): " + std::to_string(i % 100) + ", x\n";
        } else if (i % 11 == 0) {
            text += "[rank" + std::to_string(i % 8) + "]:[W warning\n";
        } else {
            text += "ordinary line " + std::to_string(i) + "\n";
        }
    }
    char path[] = "/tmp/autoheal-scanner-mt-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    auto scan = [&](unsigned threads) {
        ScanLimits limits;
        limits.chunk_bytes = 1000;
        limits.per_signature_cap = 50;
        limits.threads = threads;
        auto scanner = Build({Sig("xid", R"(NVRM: Xid \(PCI:(?P<pci>[^)]+)\): (?P<xid>\d+))"),
                              Sig("context-rank", R"(^\[rank(?P<rank>\d+)\]:\[W)")},
                             limits);
        EvidenceSet set;
        lseek(fd, 0, SEEK_SET);
        EXPECT_TRUE(scanner->ScanFd(fd, "log", &set).ok());
        return set;
    };
    EvidenceSet one = scan(1);
    EvidenceSet many = scan(3);
    close(fd);
    unlink(path);
    EXPECT_EQ(one.lines, 5000u);
    EXPECT_EQ(many.lines, one.lines);
    EXPECT_EQ(many.bytes, one.bytes);
    EXPECT_EQ(one.Count("xid"), 714u);  // every line; only the first 50 are kept
    EXPECT_EQ(many.Count("xid"), one.Count("xid"));
    ASSERT_EQ(many.items.size(), one.items.size());
    for (std::size_t i = 0; i < one.items.size(); ++i) {
        EXPECT_EQ(many.items[i].signature, one.items[i].signature) << i;
        EXPECT_EQ(many.items[i].line, one.items[i].line) << i;
        EXPECT_EQ(many.items[i].fields, one.items[i].fields) << i;
    }
    EXPECT_EQ(one.items.front().line, 7u);
}

TEST(Scanner, PatternsHyperscanRejectsStillMatchLineByLine) {
    // \b word boundaries with Unicode classes are accepted by RE2; whichever path each pattern
    // takes, the results must be the same.
    auto scanner = Build({Sig("a", R"(\pL+ failed)"), Sig("b", "plain")});
    EvidenceSet set;
    scanner->ScanText("Überprüfung failed\nplain text\n", "log", &set);
    EXPECT_EQ(set.Count("a"), 1u);
    EXPECT_EQ(set.Count("b"), 1u);
    EXPECT_EQ(scanner->prefiltered() + scanner->line_by_line(), 2u);
}

TEST(Scanner, PatternsReadBytesLikeThePrefilter) {
    // "é" is two bytes in UTF-8: `.` is one byte for both RE2 (Latin-1) and Hyperscan, so the
    // prefilter and the confirmation agree, and a UTF-8 literal still matches its bytes.
    auto scanner = Build({Sig("two", "a..b"), Sig("one", "a.b"), Sig("lit", "é!")});
    EvidenceSet set;
    scanner->ScanText(
        "a\xc3\xa9"
        "b\n\xc3\xa9!\n",
        "log", &set);
    EXPECT_EQ(set.Count("two"), 1u);
    EXPECT_EQ(set.Count("one"), 0u);
    EXPECT_EQ(set.Count("lit"), 1u);
}

TEST(Scanner, BadPatternIsAnError) {
    auto r = Scanner::Build({Sig("bad", "(")});
    EXPECT_FALSE(r.ok());
}

TEST(Scanner, EmptyAndBinaryInputIsHarmless) {
    auto scanner = Build({Sig("x", "Xid")});
    EvidenceSet set;
    scanner->ScanText("", "empty", &set);
    scanner->ScanText(std::string("\0\xff\xfeXid\0\n", 8), "bin", &set);
    EXPECT_EQ(set.Count("x"), 1u);
}

}  // namespace
}  // namespace autoheal::diag
