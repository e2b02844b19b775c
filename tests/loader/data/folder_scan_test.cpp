// data/folder_scan: the class folders walked by several threads list what
// std::filesystem::recursive_directory_iterator lists (links, nesting, empty files, names that
// sort differently byte by byte and component by component), in std::filesystem::path's order.

#include "data/folder_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "data/dataset_index.hpp"
#include "stoke/error.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;

bool png_or_jpg(const char* name) {
  const std::string n = name;
  return n.size() > 4 && (n.ends_with(".png") || n.ends_with(".jpg") || n.ends_with(".JPG"));
}

// What the index used to do for one class folder, with std::filesystem.
detail::ClassListing reference(const fs::path& folder) {
  std::vector<fs::path> found;
  for (const auto& e :
       fs::recursive_directory_iterator(folder, fs::directory_options::skip_permission_denied))
    if (!e.is_directory() && png_or_jpg(e.path().filename().c_str())) found.push_back(e.path());
  std::sort(found.begin(), found.end());
  detail::ClassListing out;
  for (const fs::path& f : found) {
    std::error_code ec;
    const auto bytes = fs::file_size(f, ec);
    out.files.push_back(f.lexically_relative(folder).string());
    out.empty.push_back(!ec && bytes == 0);
  }
  return out;
}

void write(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

TEST(FolderScan, ListsWhatTheStandardLibrarysWalkListsInItsOrder) {
  test::TempDir dir;
  std::vector<std::string> folders;
  for (int c = 0; c < 37; ++c) {
    const fs::path cls = dir.path() / fs::path("c").concat(std::to_string(c));
    folders.push_back(cls.string());
    for (int i = 0; i < c % 7; ++i)
      write(cls / fs::path("i").concat(std::to_string(i)) += ".png", "x");
    // "a.png" sorts before "a/b.png" byte by byte ('.' < '/'), after it by component.
    write(cls / "a.png", "x");
    write(cls / "a" / "b.png", "x");
    write(cls / "a-b.jpg", "x");
    write(cls / "A.JPG", "x");
    write(cls / "deep" / "er" / "est" / "z.jpg", "x");
    write(cls / "empty.png", "");
    write(cls / "notes.txt", "no image");
    write(cls / ".png", "a dot file: no extension");
    if (c % 4 == 0) {
      fs::create_directory_symlink(cls / "deep", cls / "link-to-folder");  // not walked
      fs::create_symlink(cls / "a.png", cls / "link-to-image.png");        // an image
      fs::create_symlink(cls / "missing.png", cls / "dangling.png");       // still a file
      fs::create_symlink(cls / "empty.png", cls / "link-to-empty.png");    // empty
    }
  }
  folders.push_back((dir.path() / "missing-class").string());  // gone: an error
  const std::vector<detail::ClassListing> got = detail::scan_class_folders(folders, png_or_jpg);
  ASSERT_EQ(got.size(), folders.size());
  for (std::size_t c = 0; c + 1 < folders.size(); ++c) {
    const detail::ClassListing want = reference(folders[c]);
    EXPECT_EQ(got[c].error, "") << folders[c];
    EXPECT_EQ(got[c].files, want.files) << folders[c];
    EXPECT_EQ(got[c].empty, want.empty) << folders[c];
  }
  EXPECT_EQ(got.back().error, folders.back() + ": No such file or directory");
}

TEST(FolderScan, ALinkLoopInAClassFolderIsAConfigErrorNamingIt) {
  test::TempDir dir;
  write(dir.path() / "cat" / "1.png", "x");
  fs::create_symlink("loop.png", dir.path() / "cat" / "loop.png");
  try {
    detail::build_index(dir.str());
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    std::string want = dir.str();  // (built up: gcc 12 warns falsely on one long sum)
    want += ": cannot be indexed: ";
    want += dir.str();
    want += "/cat/loop.png: Too many levels of symbolic links";
    EXPECT_EQ(std::string(e.what()), want);
  }
}

}  // namespace
}  // namespace stoke
