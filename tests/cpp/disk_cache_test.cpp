#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cache/disk_cache.h"

namespace kjit::cache {
namespace {

// A fresh directory removed (with its files) at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/kjit-disk-cache-test-XXXXXX";
    if (!mkdtemp(path_.data())) path_.clear();
  }
  ~TempDir() { remove_tree(path_); }
  const std::string& path() const { return path_; }

 private:
  static void remove_tree(const std::string& dir) {
    if (dir.empty()) return;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        std::string p = dir + "/" + name;
        struct stat st;
        if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
          remove_tree(p);
        } else {
          ::unlink(p.c_str());
        }
      }
      closedir(d);
    }
    ::rmdir(dir.c_str());
  }
  std::string path_;
};

// The entry files of |dir| (full paths), sorted.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      out.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

uint64_t file_size(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void set_mtime(const std::string& path, time_t seconds) {
  timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

// The path of the entry |key| was stored under (the only file that appears when storing it).
std::string store_and_find(DiskCache& cache, const std::string& key, const std::string& payload) {
  std::vector<std::string> before = entries(cache.directory());
  cache.store(key, payload);
  std::vector<std::string> after = entries(cache.directory());
  std::vector<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  return added.size() == 1 ? added[0] : std::string();
}

TEST(DiskCache, StoreLoadRoundTrip) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  DiskCache cache(tmp.path() + "/cache", 1 << 20);
  ASSERT_TRUE(cache.enabled());
  EXPECT_EQ(cache.directory(), tmp.path() + "/cache");
  std::string payload("binary\0payload\xff\x01", 17);
  const std::string key = "kjit 0.1 cpu\ng++ 12\nsource text\n";
  EXPECT_FALSE(cache.load(key).has_value());
  cache.store(key, payload);
  auto loaded = cache.load(key);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, payload);
  EXPECT_FALSE(cache.load(key + " ").has_value());
  EXPECT_FALSE(cache.load("another key").has_value());
  EXPECT_TRUE(cache.load(key).has_value());  // a miss on another key leaves this one
  // An empty payload is a payload.
  cache.store("empty", "");
  auto empty = cache.load("empty");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(*empty, "");
  // Storing again replaces.
  cache.store(key, "second");
  EXPECT_EQ(cache.load(key).value_or(""), "second");
  DiskCache::Usage u = cache.usage();
  EXPECT_EQ(u.entries, 2u);
  // A second cache object on the same directory sees the entries.
  DiskCache again(tmp.path() + "/cache/", 1 << 20);
  EXPECT_EQ(again.load(key).value_or(""), "second");
  cache.clear();
  EXPECT_EQ(cache.usage().entries, 0u);
  EXPECT_FALSE(cache.load(key).has_value());
}

TEST(DiskCache, DisabledWithEmptyDirectory) {
  DiskCache cache("", 1 << 20);
  EXPECT_FALSE(cache.enabled());
  cache.store("k", "v");
  EXPECT_FALSE(cache.load("k").has_value());
  EXPECT_EQ(cache.usage().entries, 0u);
}

TEST(DiskCache, CorruptedPayloadIsRemoved) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const std::string payload(1000, 'p');
  std::string path = store_and_find(cache, "key", payload);
  ASSERT_FALSE(path.empty());
  std::string data = read_file(path);
  ASSERT_GT(data.size(), payload.size());
  data[data.size() - 500] ^= 0x01;  // one bit of the payload
  write_file(path, data);
  EXPECT_FALSE(cache.load("key").has_value());
  EXPECT_FALSE(exists(path));
}

TEST(DiskCache, TruncatedFileIsRemoved) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  for (size_t cut : {size_t{1}, size_t{600}, size_t{1010}}) {
    std::string path = store_and_find(cache, "key", std::string(1000, 'p'));
    ASSERT_FALSE(path.empty());
    std::string data = read_file(path);
    ASSERT_GT(data.size(), cut);
    write_file(path, data.substr(0, data.size() - cut));
    EXPECT_FALSE(cache.load("key").has_value()) << cut;
    EXPECT_FALSE(exists(path)) << cut;
  }
  // And an empty file.
  std::string path = store_and_find(cache, "key", "payload");
  write_file(path, "");
  EXPECT_FALSE(cache.load("key").has_value());
  EXPECT_FALSE(exists(path));
}

TEST(DiskCache, EntryOfAnotherKeyIsNotReturned) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  std::string path_a = store_and_find(cache, "key a", "payload a");
  std::string path_b = store_and_find(cache, "key b", "payload b");
  ASSERT_FALSE(path_a.empty());
  ASSERT_FALSE(path_b.empty());
  ASSERT_NE(path_a, path_b);
  // As if the two keys' file names collided: b's file now holds a's entry.
  write_file(path_b, read_file(path_a));
  EXPECT_FALSE(cache.load("key b").has_value());
  EXPECT_FALSE(exists(path_b));
  EXPECT_EQ(cache.load("key a").value_or(""), "payload a");
}

TEST(DiskCache, PrivateModes) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/a/b/cache";
  DiskCache cache(dir, 1 << 20);
  ASSERT_TRUE(cache.enabled());
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string path = store_and_find(cache, "key", "payload");
  ASSERT_FALSE(path.empty());
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  // No temporary file is left behind.
  EXPECT_EQ(entries(dir).size(), 1u);
}

TEST(DiskCache, ExistingOpenDirectoryIsMadePrivate) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  DiskCache cache(dir, 1 << 20);
  EXPECT_TRUE(cache.enabled());
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(DiskCache, EntriesOthersCouldWriteAreRefused) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  std::string path = store_and_find(cache, "key", "payload");
  ASSERT_EQ(chmod(path.c_str(), 0622), 0);
  EXPECT_FALSE(cache.load("key").has_value());
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  EXPECT_EQ(cache.load("key").value_or(""), "payload");
}

TEST(DiskCache, AFileThatIsNotADirectoryDisablesTheCache) {
  TempDir tmp;
  const std::string file = tmp.path() + "/file";
  write_file(file, "x");
  DiskCache cache(file, 1 << 20);
  EXPECT_FALSE(cache.enabled());
  cache.store("k", "v");
  EXPECT_FALSE(cache.load("k").has_value());
}

TEST(DiskCache, EvictsLeastRecentlyUsedFirst) {
  TempDir tmp;
  const std::string payload(1000, 'x');
  // Measure one entry's size (keys of equal length give entries of equal size).
  uint64_t entry = 0;
  {
    TempDir probe;
    DiskCache c(probe.path(), 1 << 20);
    entry = file_size(store_and_find(c, "key-0", payload));
  }
  ASSERT_GT(entry, payload.size());
  // Room for three entries, not four.
  DiskCache cache(tmp.path(), 3 * entry + entry / 2);
  const time_t now = std::time(nullptr);
  std::string a = store_and_find(cache, "key-a", payload);
  std::string b = store_and_find(cache, "key-b", payload);
  std::string c = store_and_find(cache, "key-c", payload);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  ASSERT_FALSE(c.empty());
  set_mtime(a, now - 300);
  set_mtime(b, now - 100);
  set_mtime(c, now - 200);

  std::string d = store_and_find(cache, "key-d", payload);
  EXPECT_FALSE(exists(a));  // the oldest
  EXPECT_TRUE(exists(b));
  EXPECT_TRUE(exists(c));
  EXPECT_TRUE(exists(d));
  EXPECT_LE(cache.usage().bytes, cache.max_bytes());
  EXPECT_EQ(cache.usage().entries, 3u);

  // Loading an entry makes it the most recently used.
  set_mtime(d, now - 50);
  set_mtime(c, now - 400);
  EXPECT_TRUE(cache.load("key-c").has_value());
  std::string e = store_and_find(cache, "key-e", payload);
  EXPECT_TRUE(exists(c));
  EXPECT_FALSE(exists(b));  // now the least recently used
  EXPECT_TRUE(exists(d));
  EXPECT_TRUE(exists(e));
  EXPECT_EQ(cache.usage().entries, 3u);
  EXPECT_LE(cache.usage().bytes, cache.max_bytes());

  // An entry over the whole cap evicts everything, itself included, rather than exceed it.
  cache.store("key-big", std::string(4 * entry, 'y'));
  EXPECT_LE(cache.usage().bytes, cache.max_bytes());
}

TEST(DiskCache, EvictionOrderFollowsSubSecondTimes) {
  TempDir tmp;
  const std::string payload(500, 'z');
  DiskCache probe_cache(tmp.path() + "/probe", 1 << 20);
  uint64_t entry = file_size(store_and_find(probe_cache, "k1", payload));
  DiskCache cache(tmp.path() + "/c", 2 * entry + entry / 2);
  std::string k1 = store_and_find(cache, "k1", payload);
  std::string k2 = store_and_find(cache, "k2", payload);
  const time_t base = std::time(nullptr) - 10;
  timespec t1[2] = {{base, 700000000}, {base, 700000000}};
  timespec t2[2] = {{base, 200000000}, {base, 200000000}};
  ASSERT_EQ(utimensat(AT_FDCWD, k1.c_str(), t1, 0), 0);
  ASSERT_EQ(utimensat(AT_FDCWD, k2.c_str(), t2, 0), 0);
  store_and_find(cache, "k3", payload);
  EXPECT_TRUE(exists(k1));
  EXPECT_FALSE(exists(k2));
}

TEST(DiskCache, StaleTemporaryFilesAreCleanedUp) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const std::string stale = tmp.path() + "/.tmp-abcdef";
  const std::string fresh = tmp.path() + "/.tmp-ghijkl";
  write_file(stale, "left by a crashed writer");
  write_file(fresh, "being written");
  set_mtime(stale, std::time(nullptr) - 7200);
  cache.store("key", "payload");
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(fresh));
  EXPECT_EQ(cache.usage().entries, 1u);
}

}  // namespace
}  // namespace kjit::cache
