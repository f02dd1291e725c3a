#include "cache/directory_trust.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <vector>

namespace kjit::cache {

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  std::unique_ptr<char, decltype(&std::free)> cwd(getcwd(nullptr, 0), &std::free);
  if (!cwd) return {};
  return std::string(cwd.get()) + "/" + path;
}

std::string untrusted_parent(const std::string& directory) {
  // The deepest directory above that exists: what does not exist yet is created by this user.
  // (|directory| is absolute: each shorter |parent| still starts with '/', empty for the root.)
  std::string parent = directory.substr(0, directory.find_last_of('/'));
  char real[PATH_MAX];
  while (!realpath(parent.empty() ? "/" : parent.c_str(), real)) {
    if (parent.empty()) return "no directory above it can be found";
    parent.resize(parent.find_last_of('/'));
  }
  // Each directory from the top down: a link within one is only as safe as the directory it
  // lies in, and realpath has followed every link.
  const std::string path = real;
  std::vector<std::string> parts{"/"};
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end == path.size() ? end > 1 : path[end] == '/') parts.push_back(path.substr(0, end));
  }
  for (const std::string& part : parts) {
    struct stat st;
    if (stat(part.c_str(), &st) != 0) return "'" + part + "' above it cannot be examined";
    if (st.st_uid != geteuid() && st.st_uid != 0) {
      return "'" + part + "' above it is owned by another user (uid " + std::to_string(st.st_uid) +
             ")";
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
      return "'" + part + "' above it can be written by other users and has no sticky bit";
    }
  }
  return {};
}

}  // namespace kjit::cache
