// The compiled-scanner cache: a second Build of the same signatures reads Hyperscan's database
// back and finds exactly what a compile finds; anything else in the folder (other signatures, a
// damaged, truncated, foreign or linked file) is a miss that compiles, never a wrong answer.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autoheal/diag/scanner.h"

namespace autoheal::diag {
namespace {

namespace fs = std::filesystem;

SignatureDef Sig(std::string name, std::string regex) {
    SignatureDef s;
    s.name = std::move(name);
    s.regex = std::move(regex);
    return s;
}

// One pattern Hyperscan takes and one it rejects (matched line by line): both paths survive.
const std::vector<SignatureDef> kSigs = {
    Sig("xid", R"(NVRM: Xid \(PCI:(?P<pci>[^)]+)\): (?P<xid>\d+))"), Sig("word", R"(\pL+ failed)")};
const std::string kLog = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1\nÜberprüfung failed\nnoise\n";

class ScannerCacheTest : public ::testing::Test {
  protected:
    ScannerCacheTest() {
        char tmpl[] = "/tmp/autoheal-scache-XXXXXX";
        root_ = ::mkdtemp(tmpl);
        dir_ = root_ + "/cache";
    }
    ~ScannerCacheTest() override { fs::remove_all(root_); }

    std::shared_ptr<const Scanner> Build(const std::vector<SignatureDef>& sigs = kSigs) {
        auto r = Scanner::Build(sigs, {}, dir_);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
        return *r;
    }
    std::vector<fs::path> Files() const {
        std::vector<fs::path> out;
        if (!fs::exists(dir_)) return out;
        for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path());
        return out;
    }
    static std::string Found(const Scanner& scanner) {
        EvidenceSet set;
        scanner.ScanText(kLog, "log", &set);
        std::string out;
        for (const Evidence& e : set.items) {
            out += e.signature + "@" + std::to_string(e.line);
            for (const auto& [k, v] : e.fields) out += " " + k + "=" + v;
            out += "\n";
        }
        return out;
    }
    std::string root_;
    std::string dir_;
};

TEST_F(ScannerCacheTest, SecondBuildReadsTheDatabaseBackAndFindsTheSame) {
    auto first = Build();
    EXPECT_FALSE(first->from_cache());
    const auto files = Files();
    ASSERT_EQ(files.size(), 1u);
    struct stat st {};
    ASSERT_EQ(::stat(files[0].c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);

    auto second = Build();
    EXPECT_TRUE(second->from_cache());
    EXPECT_EQ(second->prefiltered(), first->prefiltered());
    EXPECT_EQ(second->line_by_line(), first->line_by_line());
    EXPECT_EQ(Found(*second), Found(*first));
    EXPECT_EQ(Found(*second), "xid@1 pci=0000:3b:00 xid=79\nword@2\n");
}

TEST_F(ScannerCacheTest, OtherSignaturesMissAndAreKeptBeside) {
    Build();
    auto other = Build({Sig("xid", R"(NVRM: Xid \(PCI:[^)]+\): (?P<xid>\d+))")});
    EXPECT_FALSE(other->from_cache());
    EXPECT_EQ(Files().size(), 2u);
    EXPECT_TRUE(Build()->from_cache());
}

TEST_F(ScannerCacheTest, DamagedOrTruncatedFilesAreCompiledAgainAndReplaced) {
    Build();
    const fs::path file = Files().at(0);
    const auto size = fs::file_size(file);
    {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        const auto at = static_cast<std::streamoff>(size - 100);  // inside Hyperscan's bytes
        f.seekg(at);
        const int byte = f.get();
        f.seekp(at);
        f.put(static_cast<char>(byte ^ 0x01));
    }
    auto damaged = Build();
    EXPECT_FALSE(damaged->from_cache());
    EXPECT_EQ(Found(*damaged), "xid@1 pci=0000:3b:00 xid=79\nword@2\n");
    EXPECT_TRUE(Build()->from_cache());  // the compile stored a good copy

    fs::resize_file(file, size / 2);
    EXPECT_FALSE(Build()->from_cache());
    EXPECT_TRUE(Build()->from_cache());
}

TEST_F(ScannerCacheTest, FilesOthersCouldHaveWrittenAreNotRead) {
    Build();
    const fs::path file = Files().at(0);
    fs::permissions(file, fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
    EXPECT_FALSE(Build()->from_cache());  // and it was replaced by a private copy
    EXPECT_TRUE(Build()->from_cache());

    fs::permissions(dir_, fs::perms::others_write, fs::perm_options::add);
    EXPECT_FALSE(Build()->from_cache());
    fs::permissions(dir_, fs::perms::others_write, fs::perm_options::remove);

    // A link in the cache folder is not followed, wherever it points.
    const fs::path real = root_ + "/elsewhere.hsdb";
    fs::rename(file, real);
    fs::create_symlink(real, file);
    EXPECT_FALSE(Build()->from_cache());
}

TEST_F(ScannerCacheTest, KeepsOnlyTheNewestFiles) {
    for (int i = 0; i < 12; ++i) Build({Sig("s", "literal number " + std::to_string(i))});
    EXPECT_LE(Files().size(), 8u);
    EXPECT_TRUE(Build({Sig("s", "literal number 11")})->from_cache());
}

TEST_F(ScannerCacheTest, NoFolderMeansNoCache) {
    auto r = Scanner::Build(kSigs, {}, "");
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE((*r)->from_cache());
    EXPECT_EQ(Found(**r), "xid@1 pci=0000:3b:00 xid=79\nword@2\n");
}

TEST(ScannerCacheDir, EnvironmentDecides) {
    EXPECT_EQ(DefaultScannerCacheDir("/x", "/c", "/h"), "/x");
    EXPECT_EQ(DefaultScannerCacheDir("", "/c", "/h"), "");  // set empty: no cache
    EXPECT_EQ(DefaultScannerCacheDir(nullptr, "/c", "/h"), "/c/autoheal");
    EXPECT_EQ(DefaultScannerCacheDir(nullptr, "relative", "/h"), "/h/.cache/autoheal");
    EXPECT_EQ(DefaultScannerCacheDir(nullptr, nullptr, "/h"), "/h/.cache/autoheal");
    EXPECT_EQ(DefaultScannerCacheDir(nullptr, nullptr, "/"), "");
    EXPECT_EQ(DefaultScannerCacheDir(nullptr, nullptr, nullptr), "");
}

}  // namespace
}  // namespace autoheal::diag
