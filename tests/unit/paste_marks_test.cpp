// What pasting and terminals add to a log (autoheal/diag/paste_marks.h) comes off before rules
// read it; the lines, and so their numbers, stay.
#include "autoheal/diag/paste_marks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace autoheal::diag {
namespace {

std::string Stripped(std::string_view text) {
    const std::optional<std::string> out = StripPasteMarks(text);
    return out ? *out : std::string(text);
}

TEST(PasteMarks, PlainLogsAreLeftAsTheyAre) {
    EXPECT_FALSE(StripPasteMarks("[1.0] NVRM: Xid 79\n  File \"x.py\", line 1\n").has_value());
    EXPECT_FALSE(StripPasteMarks("").has_value());
    EXPECT_FALSE(StripPasteMarks("\n\n").has_value());
    // Brackets that are not colours, and '>' inside a line.
    EXPECT_FALSE(StripPasteMarks("[mlx5_0] rank 1 -> 2 [5m]\n").has_value());
}

TEST(PasteMarks, QuoteMarksGoAtAnyDepthKeepingTheQuotedIndentation) {
    EXPECT_EQ(Stripped("> CA 'mlx5_7'\n>         State: Down\n"),
              "CA 'mlx5_7'\n        State: Down\n");
    EXPECT_EQ(Stripped("> > nested\n>> tight\n  > indented quote\nplain\n"),
              "nested\ntight\nindented quote\nplain\n");
    EXPECT_EQ(Stripped(">\n> x"), "\nx");
    // A '>' before the line's own text is no quote mark.
    EXPECT_EQ(Stripped("> quoted\n>: Cannot allocate memory (12)\n>=2.1 required\n"),
              "quoted\n>: Cannot allocate memory (12)\n>=2.1 required\n");
}

TEST(PasteMarks, ColoursGoWithOrWithoutTheirEscapeByte) {
    EXPECT_EQ(Stripped("\x1b[1;31mERROR\x1b[0m: NCCL WARN x\n"), "ERROR: NCCL WARN x\n");
    EXPECT_EQ(Stripped("\x1b]0;title\aline\x1b(B\x1b[m\n"), "line\n");
    EXPECT_EQ(Stripped("[1;31mRuntimeError[0m: CUDA error\n"), "RuntimeError: CUDA error\n");
    EXPECT_EQ(Stripped("^[[33mwarn^[[0m x\n"), "warn x\n");
    // As rsyslog writes a control character it received: '#' (or a backslash) and its octal.
    EXPECT_EQ(Stripped("host python[7]: #033[2m#033[36m(pid=9)#033[0m KeyError: 'x'\n"),
              "host python[7]: (pid=9) KeyError: 'x'\n");
    EXPECT_EQ(Stripped("\\033[1;31mERROR\\033[0m y\n"), "ERROR y\n");
    // "#033" before no CSI sequence stays, as does a "#033[" not ending in a final byte.
    EXPECT_EQ(Stripped("ticket #033 [x] #033[\n"), "ticket #033 [x] #033[\n");
    // Without a "[0m" anywhere, a bare "[31m" is text.
    EXPECT_EQ(Stripped("timeout [30m]\n"), "timeout [30m]\n");
}

TEST(PasteMarks, CommonIndentationGoesRelativeIndentationStays) {
    EXPECT_EQ(Stripped("    Traceback:\n      File \"x\"\n\n    Error: y\n"),
              "Traceback:\n  File \"x\"\n\nError: y\n");
    EXPECT_EQ(Stripped("\tlink mlx5_7/1 state DOWN\r\n\tnext\r\n"),
              "link mlx5_7/1 state DOWN\r\nnext\r\n");
    EXPECT_EQ(Stripped("> \x1b[32m    a\x1b[0m\n>     b\n"), "a\nb\n");
    // An indented block whose first line starts with Python's prompt, read as a quote mark.
    EXPECT_EQ(Stripped("    >>> f()\n    Traceback:\n      File \"x\"\n"),
              "f()\nTraceback:\n  File \"x\"\n");
}

TEST(PasteMarks, AContainerLogsPrefixGoesWhatTheContainerPrintedStays) {
    // kubelet's CRI log format: the runtime's time, the stream, F (whole line) or P (a piece).
    EXPECT_EQ(Stripped("2026-12-01T10:00:00.123456789Z stdout F CA 'mlx5_7'\n"
                       "2026-12-01T10:00:00.123456789Z stdout F         State: Down\n"
                       "2026-12-01T10:00:01+00:00 stderr P [ 12.5] NVRM: Xid 79\n"
                       "2026-12-01T10:00:01Z stderr F\n"),
              "CA 'mlx5_7'\n        State: Down\n[ 12.5] NVRM: Xid 79\n\n");
    // Inside a quoted paste too; a line without the prefix stays as it is.
    EXPECT_EQ(Stripped("> 2026-12-01T10:00:00Z stderr F RuntimeError: x\nplain stdout F line\n"),
              "RuntimeError: x\nplain stdout F line\n");
    // Another stream, or no tag, is not the runtime's prefix; a prefix twice over (a log
    // shipper's pod printing a container's log) goes twice.
    EXPECT_EQ(Stripped("2026-12-01T10:00:00Z stdout F a\n2026-12-01T10:00:00Z stdin F b\n"
                       "2026-12-01T10:00:00Z stderr c\n"
                       "2026-12-01T10:00:01Z stdout F 2026-12-01T10:00:00Z stderr F d\n"),
              "a\n2026-12-01T10:00:00Z stdin F b\n2026-12-01T10:00:00Z stderr c\nd\n");
    // kubectl logs --prefix: the pod and container before each line, also with --timestamps
    // after it; a bracket of other words is the line's own.
    EXPECT_EQ(Stripped("[pod/trainer-0/pytorch] [ 12.5] NVRM: Xid 79\n"
                       "[pod/trainer-1/pytorch]         State: Down\n"
                       "[pod/trainer-1/pytorch] 2026-12-01T10:00:00Z stderr F x\n"
                       "[rank0]: RuntimeError: y\n"),
              "[ 12.5] NVRM: Xid 79\n        State: Down\nx\n[rank0]: RuntimeError: y\n");
    // docker compose logs ("NAME-1", "project_NAME_1", padded past the longest name); a table's
    // rows (ipmitool's "   1 | ") and words before a bar are no container's name.
    EXPECT_EQ(Stripped("$ docker compose logs\n"
                       "trainer-1  | [ 12.5] NVRM: Xid 79\n"
                       "proj_db_1  |         State: Down\n"
                       "trainer-1  |\n"
                       "   1 | 05/17/2023 | Power Supply PS2 | Failure detected\n"
                       "Status | ok\n"),
              "$ docker compose logs\n[ 12.5] NVRM: Xid 79\n        State: Down\n\n"
              "   1 | 05/17/2023 | Power Supply PS2 | Failure detected\nStatus | ok\n");
    EXPECT_EQ(Stripped("ID | Name\n 1 | PS2 | Failure detected\n"),
              "ID | Name\n 1 | PS2 | Failure detected\n");
    // A host before a health check's line, one blank before its bar, is no container's name.
    EXPECT_FALSE(StripPasteMarks("gpu-nd-014 | Healthy\ngpu-nd-015 | ERROR: nhc: x\n"));
    // Without one in the text's first 4 KiB, a later line keeps it (a log's chunk, not a paste).
    const std::string late = std::string(4096, 'x') + "\n2026-12-01T10:00:00Z stdout F e\n";
    EXPECT_EQ(Stripped(late), late);
}

TEST(PasteMarks, LineCountStays) {
    const std::string text = "> a\n\x1b[0m\n    b\n\n> c";
    const std::string out = Stripped(text);
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
}

// `line` cut into pieces of `width` columns, as a terminal shows a longer line.
std::string HardWrap(std::string line, std::size_t width) {
    std::string out;
    while (line.size() > width) {
        out += line.substr(0, width) + "\n";
        line.erase(0, width);
    }
    return out + line + "\n";
}

TEST(PasteMarks, ATerminalsWrapIsUndoneOnTheFirstLineOfEach) {
    const std::string xid =
        "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python3, GPU has fallen "
        "off the bus.";
    const std::string nccl =
        "node-5:4417:4530 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from "
        "peer 10.2.0.9<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv) localGid "
        "::ffff:10.2.0.5 remoteGids::ffff:10.2.0.9 hca mlx5_0";
    // At 80 columns (a serial console's) one wrapped line is enough; the pieces after the first
    // are left empty, so the lines keep their numbers.
    EXPECT_EQ(Stripped("boot\n" + HardWrap(xid, 80) + "done\n"), "boot\n" + xid + "\n\ndone\n");
    // A line in three pieces, with CRLF line ends, and quoted.
    const std::string three = HardWrap(nccl, 80);
    EXPECT_EQ(Stripped(three), nccl + "\n\n\n");
    std::string crlf;
    for (char c : three) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    EXPECT_EQ(Stripped(crlf), nccl + "\r\n\n\n");  // the emptied pieces keep no CR
    // A piece that starts with '>' (the wrap fell inside "<NAME>") keeps it.
    const std::string mmap =
        "RuntimeError: unable to mmap 8192 bytes from file </torch_91822_2740031188_40117>: "
        "Cannot allocate memory (12)";
    ASSERT_EQ(mmap[80], '>');
    EXPECT_EQ(Stripped(HardWrap(mmap, 80)), mmap + "\n\n");
    // At another width, two wrapped lines are wanted.
    EXPECT_EQ(Stripped(HardWrap(xid, 70) + HardWrap(nccl, 70)), xid + "\n\n" + nccl + "\n\n\n\n");
    // Colours syslog wrote out as text took columns of the terminal before they go.
    const std::string escaped =
        "Dec  7 10:14:02 gpu-b03 python3[48211]: #033[36m(RayTrainWorker pid=48377)#033[0m "
        "ValueError: all input arrays must have the same shape";
    EXPECT_EQ(Stripped(HardWrap(escaped, 80)),
              "Dec  7 10:14:02 gpu-b03 python3[48211]: (RayTrainWorker pid=48377) ValueError: all "
              "input arrays must have the same shape\n\n");
}

TEST(PasteMarks, LinesThatOnlyLookWrappedStay) {
    // A drawn table's rows all fill its width and start and end with its border.
    const std::string table =
        "+-----------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
        "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:3B:00.0 Off |        4 |\n"
        "+-----------------------------------------------------------------------------+\n";
    EXPECT_EQ(Stripped(table), table);
    // Records of one program start alike, whatever their length.
    const std::string same =
        "gpu-node21:7783:7990 [7] transport/net_ib.cc:2292 NCCL WARN NET/IB: Got completion from "
        "peer 10.10.5.30<40977> with status=5\n"
        "gpu-node21:7781:7992 [6] transport/net_ib.cc:2292 NCCL WARN NET/IB: Got completion\n"
        "gpu-node21:7783:7990 [7] transport/net_ib.cc:2292 NCCL WARN NET/IB: Got completion from "
        "peer 10.10.5.30<40977> with status=5\n"
        "gpu-node21:7782:7995 [6] NCCL INFO proxy.cc:698 -> 6\n";
    EXPECT_EQ(Stripped(same), same);
    // A line with a prefix of its own starts a record.
    const std::string kernel =
        "Dec  1 03:14:07 gpu-c07 kernel: mlx5_core 0000:61:00.0: wait_func_handle_exec_timeout\n"
        "Dec  1 03:14:07 gpu-c07 kernel: mlx5_core 0000:61:00.0: cmd[22]: CREATE_DCT(0x710)\n";
    EXPECT_EQ(Stripped(kernel), kernel);
    // Away from 80 columns, one longest line followed by a bare one is a log's own layout.
    const std::string one =
        "RuntimeError: CUDA error: an illegal memory access was encountered on rank 3\n"
        "CUDA kernel errors might be asynchronously reported at some other API call\n";
    EXPECT_EQ(Stripped(one), one);
}

}  // namespace
}  // namespace autoheal::diag
