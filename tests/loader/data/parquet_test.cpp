// Parquet datasets: files written by pyarrow, polars, DuckDB and Hugging Face datasets (each
// with its own defaults, then every codec and page layout pyarrow writes) deliver what the same
// images deliver from a folder and from tar shards; class names come from the ClassLabel feature
// or the string labels; a damaged page skips its rows, naming file, row group and row; the forms
// of the data string; and the page reader's bounds on hostile headers and bodies.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/dataset_index.hpp"
#include "data/hf_hub.hpp"
#include "data/index_format.hpp"
#include "data/parquet_dataset.hpp"
#include "data/parquet_page.hpp"
#include "data/parquet_reader.hpp"
#include "servers.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using detail::BadInput;
using test::run;

// Whether the Python the Parquet tests write with has `module`. A writer missing skips its test,
// or fails it under STOKE_REQUIRE_SERVERS=1 (CI installs every writer: setup.sh).
bool has_writer(const std::string& module) {
  const std::string command =
      std::string(STOKE_PARQUET_PYTHON) + " -c 'import " + module + "' 2> /dev/null";
  return std::system(command.c_str()) == 0;
}

#define REQUIRE_WRITER(module)                                                        \
  do {                                                                                \
    if (!has_writer(module)) {                                                        \
      if (test::servers_required()) FAIL() << (module) << " is not installed (setup.sh)"; \
      GTEST_SKIP() << (module) << " is not installed (setup.sh installs it)";         \
    }                                                                                 \
  } while (0)

// testdata/jpeg written as Parquet by `writer` with `flags` (tests/loader/make_parquet.py):
// the file (or, with --files, the files' pattern).
std::string write_parquet(const test::TempDir& dir, const std::string& name,
                          const std::string& writer, const std::string& flags = "") {
  const std::string out = (dir.path() / name).string();
  run(std::string(STOKE_PARQUET_PYTHON) + " " STOKE_SOURCE_DIR "/tests/loader/make_parquet.py " +
      test::testdata("jpeg") + " " + out + " --writer " + writer + " " + flags + " > /dev/null");
  return out;
}

Options jpeg_options(const std::string& data) {
  Options o = test::fashion_options(2, 32);
  o.data = data;
  o.height = o.width = 32;
  return o;
}

test::Delivered deliver(const Options& o) {
  Loader loader(o);
  EXPECT_EQ(loader.dataset_size(), 96) << o.data;
  return test::collect(loader);
}

const test::Delivered& folder_batches() {
  static const test::Delivered d = deliver(jpeg_options(test::testdata("jpeg")));
  return d;
}

class ParquetWriters : public testing::TestWithParam<std::string> {};

// Each writer with its defaults (they differ: pyarrow and polars put every image of a row group
// in a dictionary page, snappy and zstd; DuckDB writes plain snappy pages; datasets writes plain
// uncompressed pages with an offset index): the folder's batches, byte for byte.
TEST_P(ParquetWriters, DeliverWhatTheFolderDelivers) {
  const std::string writer = GetParam();
  REQUIRE_WRITER(writer);
  test::TempDir dir;
  const std::string file = write_parquet(dir, "train.parquet", writer);
  EXPECT_TRUE(deliver(jpeg_options(file)) == folder_batches()) << writer;
}

INSTANTIATE_TEST_SUITE_P(Parquet, ParquetWriters,
                         testing::Values("pyarrow", "polars", "duckdb", "datasets"),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

// Every codec and page layout pyarrow writes: compressed or not, data pages V1 and V2, plain or
// dictionary-encoded, many small pages, with and without an offset index.
TEST(ParquetLoader, EveryCodecAndPageLayoutDeliversTheSameBatches) {
  REQUIRE_WRITER("pyarrow");
  test::TempDir dir;
  const char* const layouts[] = {
      "--compression none",
      "--compression snappy --rows-per-page 5",
      "--compression gzip --no-dictionary --rows-per-page 7",
      "--compression brotli --data-page-v2 --rows-per-page 9",
      "--compression lz4 --page-index --rows-per-page 11 --plain-binary",
      "--compression zstd --data-page-v2 --no-dictionary --page-index --rows-per-page 3",
      "--compression none --data-page-v2 --no-dictionary --rows-per-page 1",
  };
  int k = 0;
  for (const char* layout : layouts) {
    std::string name = std::to_string(k++);
    name += ".parquet";
    const std::string file = write_parquet(dir, name, "pyarrow", layout);
    EXPECT_TRUE(deliver(jpeg_options(file)) == folder_batches()) << layout;
  }
}

// A row group is what a shard is to the plan: row groups of the shards' sizes, under the same
// shuffle window, give the shards' batches.
TEST(ParquetLoader, RowGroupsAreShardsToTheShuffleWindow) {
  REQUIRE_WRITER("pyarrow");
  test::TempDir dir;
  run("python3 " STOKE_SOURCE_DIR "/tests/loader/make_shards.py " + test::testdata("jpeg") + " " +
      (dir.path() / "s").string() + " --shards 3");
  const std::string file = write_parquet(dir, "g.parquet", "pyarrow", "--rows-per-group 32");
  Options shards = jpeg_options((dir.path() / "s-{000000..000002}.tar").string());
  shards.shuffle_window = 2;
  Options parquet = shards;
  parquet.data = file;
  const test::Delivered from_shards = deliver(shards);
  EXPECT_TRUE(deliver(parquet) == from_shards);
  EXPECT_FALSE(from_shards == folder_batches());  // (the window changed the order)
}

// Class names: a ClassLabel feature's names, or string labels' classes sorted (as a folder's
// class folders are); the labels are their numbers.
TEST(ParquetLoader, ClassNamesComeFromTheClassLabelFeatureOrTheSortedStrings) {
  REQUIRE_WRITER("datasets");
  REQUIRE_WRITER("polars");
  test::TempDir dir;
  std::vector<std::string> folders;
  for (const auto& e : fs::directory_iterator(test::testdata("jpeg")))
    if (e.is_directory()) folders.push_back(e.path().filename().string());
  std::sort(folders.begin(), folders.end());
  for (const auto& [writer, flags] : {std::pair<std::string, std::string>{"datasets", ""},
                                      {"polars", "--labels string"}}) {
    const std::string file = write_parquet(dir, writer + ".parquet", writer, flags);
    Options o = jpeg_options(file);
    Loader loader(o);
    EXPECT_EQ(loader.class_names(), folders) << writer;
    EXPECT_TRUE(test::collect(loader) == folder_batches()) << writer;
  }
  // Without labels: -1 for every sample, no names.
  const std::string file = write_parquet(dir, "none.parquet", "polars", "--labels none");
  Loader loader(jpeg_options(file));
  EXPECT_TRUE(loader.class_names().empty());
  const test::Delivered d = test::collect(loader);
  EXPECT_EQ(std::count(d.labels.begin(), d.labels.end(), -1),
            static_cast<std::ptrdiff_t>(d.labels.size()));
}

// Parquet files on a server: the footer, page index and labels are read through ranged GETs while
// indexing; then each file is fetched whole into the shard cache ahead of the plan, as a shard
// is (one download for all its row groups), and workers read its local copy; without the cache
// (cache_limit 0) each page is a ranged GET. Over HTTP (nginx) and S3 (SeaweedFS), either way,
// the local files' batches.
TEST(ParquetRemote, FilesOnHttpAndS3DeliverWhatTheLocalFilesDeliver) {
  REQUIRE_WRITER("pyarrow");
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  STOKE_SKIP_WITHOUT(!test::SeaweedS3::binary().empty(), "SeaweedFS (weed)");
  test::TempDir dir;
  const fs::path www = dir.path() / "www";
  fs::create_directories(www);
  write_parquet(dir, "www/train", "pyarrow", "--files 2 --rows-per-group 16 --page-index");
  const std::string pattern = "/train-{00000..00001}-of-00002.parquet";
  Options local = jpeg_options((www.string() + pattern));
  local.cache_dir = (dir.path() / "cache").string();
  const test::Delivered expected = deliver(local);
  EXPECT_TRUE(expected == folder_batches());

  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  Options http = local;
  http.data = nginx.url() + pattern;
  EXPECT_TRUE(deliver(http) == expected);

  test::SeaweedS3 s3(dir.path() / "weed");
  ASSERT_TRUE(s3.started()) << s3.log_tail();
  run(s3.curl("-X PUT " + s3.endpoint() + "/stoke-test > /dev/null"));
  for (const auto& f : fs::directory_iterator(www))
    run(s3.curl("-T " + f.path().string() + " " + s3.endpoint() + "/stoke-test/pq/" +
                f.path().filename().string() + " > /dev/null"));
  const test::ScopedEnv endpoint("AWS_ENDPOINT_URL", s3.endpoint());
  const test::ScopedEnv key("AWS_ACCESS_KEY_ID", test::SeaweedS3::kAccessKey);
  const test::ScopedEnv secret("AWS_SECRET_ACCESS_KEY", test::SeaweedS3::kSecretKey);
  const test::ScopedEnv region("AWS_REGION", "us-east-1");
  Options on_s3 = local;
  on_s3.data = "s3://stoke-test/pq" + pattern;
  {
    Loader cached(on_s3);
    EXPECT_TRUE(test::collect(cached) == expected);
    const Stats s = cached.stats();
    EXPECT_EQ(s.shard_cache.rfind("on: ", 0), 0u) << s.shard_cache;
    std::uint64_t file_bytes = 0;
    for (const auto& f : fs::directory_iterator(www)) file_bytes += fs::file_size(f.path());
    EXPECT_EQ(static_cast<std::uint64_t>(s.cache_bytes_fetched), file_bytes);  // each once
    // Each file a miss, once: fetched before the first batch reading it. (Hits are not counted
    // here: once the consumer has taken the epoch's last batch, the prefetcher may already count
    // the next epoch's uses of the same files as hits.)
    EXPECT_EQ(s.cache_misses, 2);
  }
  on_s3.cache_limit = 0;
  Loader ranged(on_s3);
  EXPECT_TRUE(test::collect(ranged) == expected);
  EXPECT_EQ(ranged.stats().shard_cache.rfind("off", 0), 0u) << ranged.stats().shard_cache;
}

// A Parquet file in a mixture reads as the folder it was written from: a mixture of the file and
// the folder gives the batches of a mixture of the folder twice.
TEST(ParquetLoader, AParquetSourceOfAMixtureReadsAsItsFolder) {
  REQUIRE_WRITER("pyarrow");
  test::TempDir dir;
  const std::string file =
      write_parquet(dir, "train.parquet", "pyarrow", "--rows-per-group 16 --page-index");
  const auto mixed = [](const std::string& first) {
    Options o = jpeg_options("");
    static_cast<SourceOptions&>(o) = SourceOptions{};
    MixtureSource a, b;
    a.data = first;
    a.weight = 1;
    b.data = test::testdata("jpeg");
    b.weight = 2;
    o.sources = {a, b};
    return o;
  };
  Loader with_file(mixed(file)), folders(mixed(test::testdata("jpeg")));
  const test::Delivered got = test::collect(with_file);
  EXPECT_TRUE(got == test::collect(folders));
  EXPECT_EQ(got.ids.size(), 192u);  // an epoch of 96 + 96: 64 from the file, 128 from the folder
}

// Hugging Face's Image struct with null bytes and a path (images `datasets` did not embed): the
// row's image is that file, relative to the Parquet file's folder (or URL). Every row a file
// (datasets' own writer), every other row (pyarrow), and the same over HTTP: the folder's
// batches. A file gone is skipped as missing, named by row and file; a remote Parquet file whose
// paths would leave its folder is refused, naming the row and path.
TEST(ParquetLoader, ImageFilesAreReadRelativeToTheParquetFile) {
  REQUIRE_WRITER("datasets");
  REQUIRE_WRITER("pyarrow");
  test::TempDir dir;
  fs::create_directories(dir.path() / "all");
  fs::create_directories(dir.path() / "www");
  const std::string all = write_parquet(dir, "all/train.parquet", "datasets", "--image-files 1");
  const std::string half =
      write_parquet(dir, "www/train.parquet", "pyarrow", "--image-files 2 --rows-per-group 16");
  EXPECT_TRUE(deliver(jpeg_options(all)) == folder_batches());
  EXPECT_TRUE(deliver(jpeg_options(half)) == folder_batches());

  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  {
    test::Nginx nginx(dir.path() / "www", dir.path() / "nginx");
    ASSERT_TRUE(nginx.started());
    EXPECT_TRUE(deliver(jpeg_options(nginx.url() + "/train.parquet")) == folder_batches());
  }

  // Rows 0..31 are the first class's (sorted): 00000.jpg is row 0.
  const fs::path gone = dir.path() / "all/images/c00-aqua/00000.jpg";
  ASSERT_TRUE(fs::remove(gone));
  test::LogLines log;
  Options o = jpeg_options(all);
  o.shuffle = false;
  o.log = log.sink();
  Loader loader(o);
  test::collect(loader);
  EXPECT_EQ(loader.stats().skipped_by_reason.at("missing"), 1);
  EXPECT_TRUE(log.contains("skipped " + all + " (sample 0, row group 0, row 0, its image " +
                           gone.string() + "): missing"));

  // A remote file naming ../00000.jpg: refused as it is indexed.
  run(std::string(STOKE_PARQUET_PYTHON) +
      " -c 'import pyarrow as pa, pyarrow.parquet as pq; pq.write_table(pa.table({\"image\": "
      "pa.array([{\"bytes\": None, \"path\": \"../00000.jpg\"}], pa.struct([(\"bytes\", "
      "pa.binary()), (\"path\", pa.string())]))}), \"" +
      (dir.path() / "www/out.parquet").string() + "\")'");
  test::Nginx nginx(dir.path() / "www", dir.path() / "nginx2");
  ASSERT_TRUE(nginx.started());
  try {
    Loader refused(jpeg_options(nginx.url() + "/out.parquet"));
    FAIL() << "a path out of the file's folder was followed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(nginx.url() +
                                         "/out.parquet (row 0): its image is the "
                                         "path '../00000.jpg', which leaves the remote Parquet "
                                         "file's folder"),
              std::string::npos)
        << e.what();
  }
}

// Row i's caption as tests/loader/make_parquet.py --captions writes it ("": null).
std::string caption(std::int64_t i) {
  if (i % 10 == 9) return "";
  std::string text = "row " + std::to_string(i) + ": ";
  for (std::int64_t k = 0; k < i % 13; ++k) text += "word ";
  return text;
}

// bytes_field names a column: each row's value passes through as a shard member's does (a null
// as none), from pyarrow's dictionary pages and datasets' plain ones, while the images stay the
// folder's; max_bytes cuts them naming the row; a column that is not there, or not bytes, is a
// ConfigError naming it.
TEST(ParquetLoader, BytesFieldPassesAColumnsValuesThrough) {
  REQUIRE_WRITER("pyarrow");
  REQUIRE_WRITER("datasets");
  test::TempDir dir;
  for (const std::string writer : {"pyarrow", "datasets"}) {
    Options o = jpeg_options(
        write_parquet(dir, writer + ".parquet", writer, "--captions --rows-per-group 40"));
    o.bytes_field = "caption";
    Loader loader(o);
    test::Delivered d;
    int nulls = 0;
    while (auto b = loader.next()) {
      ASSERT_EQ(b->max_bytes(), 68) << writer;  // the longest caption: row 12's
      for (int i = 0; i < b->size(); ++i) {
        const std::string want = caption(b->sample_ids()[i]);
        nulls += want.empty();
        ASSERT_EQ(b->byte_counts()[i], static_cast<int>(want.size())) << writer;
        const auto* got = reinterpret_cast<const char*>(b->bytes().data()) + i * b->max_bytes();
        EXPECT_EQ(std::string(got, want.size()), want) << writer;
      }
      test::append(d, *b);
    }
    EXPECT_EQ(nulls, 9) << writer;
    EXPECT_TRUE(d == folder_batches()) << writer;
  }
  test::LogLines log;
  Options cut = jpeg_options((dir.path() / "pyarrow.parquet").string());
  cut.bytes_field = "caption";
  cut.max_bytes = 60;
  cut.log = log.sink();
  {
    Loader loader(cut);
    EXPECT_TRUE(log.contains("13 sample(s) carry more than max_bytes 60 bytes"));
  }
  cut.on_error = OnError::kError;
  try {
    Loader strict(cut);
    FAIL() << "a caption over max_bytes passed under on_error=error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(", row group 0, row 11)'s caption carries 63 bytes"),
              std::string::npos)
        << e.what();
  }
  for (const auto& [field, says] :
       {std::pair<std::string, std::string>{"text", "no column 'text' to read bytes_field from"},
        {"label",
         "column label is INT64; bytes_field reads a top-level binary or string column"}}) {
    Options bad = jpeg_options((dir.path() / "pyarrow.parquet").string());
    bad.bytes_field = field;
    try {
      Loader refused(bad);
      FAIL() << field;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

// A mirror of the Hub's URL layout on nginx: the tree listing (two pages, the second by its Link
// header) and downloads that redirect to another server, as the Hub's do to its CDN. hf:// paths
// (a folder by split, a glob) give the local files' batches; HF_TOKEN reaches the endpoint and
// never the server a download was redirected to, nor a line of the loader's log.
// A Hub file's URL: its path percent-encoded ('/' kept), the revision as written.
TEST(ParquetHub, AFilesUrlEncodesItsPath) {
  const test::ScopedEnv endpoint("HF_ENDPOINT", "https://hub.example");
  const detail::HubPath at =
      detail::parse_hub_path("hf://datasets/acme/flowers@refs%2Fconvert%2Fparquet/data");
  EXPECT_EQ(detail::hub_file_url(at, "data/train 1#?.parquet"),
            "https://hub.example/datasets/acme/flowers/resolve/refs%2Fconvert%2Fparquet/data/"
            "train%201%23%3F.parquet");
  EXPECT_EQ(detail::hub_file_url(at, "default/train/0000.parquet"),
            "https://hub.example/datasets/acme/flowers/resolve/refs%2Fconvert%2Fparquet/default/"
            "train/0000.parquet");
}

TEST(ParquetHub, HfPathsResolveThroughTheHubApiAndTheTokenStaysWithItsHost) {
  REQUIRE_WRITER("pyarrow");
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path cdn_root = dir.path() / "cdn";
  fs::create_directories(cdn_root / "files/data");
  write_parquet(dir, "cdn/files/data/train", "pyarrow", "--files 2");
  write_parquet(dir, "cdn/files/data/test-00000-of-00001.parquet", "pyarrow",
                "--rows-per-group 10");
  const std::string log_format = "  log_format auth '$request_uri [$http_authorization]';\n";
  test::Nginx cdn(cdn_root, dir.path() / "nginx-cdn", log_format, "",
                  "    access_log " + (dir.path() / "cdn.log").string() + " auth;\n");
  ASSERT_TRUE(cdn.started());
  const fs::path hub_root = dir.path() / "hub";
  const fs::path tree = hub_root / "api/datasets/acme/flowers/tree/main";
  fs::create_directories(tree);
  std::ofstream(tree / "data")
      << R"([{"type": "directory", "path": "data/extra"},
            {"type": "file", "path": "data/train-00000-of-00002.parquet", "size": 1},
            {"type": "file", "path": "data/README.md", "size": 1}])";
  std::ofstream(hub_root / "api/page2")
      << R"([{"type": "file", "path": "data/train-00001-of-00002.parquet", "size": 1},
            {"type": "file", "path": "data/test-00000-of-00001.parquet", "size": 1}])";
  std::string hub_server = "    access_log " + (dir.path() / "hub.log").string() + " auth;\n";
  hub_server +=
      "    location = /api/datasets/acme/flowers/tree/main/data {\n"
      "      default_type application/json;\n"
      "      add_header Link '</api/page2>; rel=\"next\"';\n    }\n"
      "    location /datasets/ {\n"
      "      rewrite ^/datasets/acme/flowers/resolve/main/(.*)$ ";
  hub_server += cdn.url();
  hub_server += "/files/$1 redirect;\n    }\n";
  test::Nginx hub(hub_root, dir.path() / "nginx-hub", log_format, "", hub_server);
  ASSERT_TRUE(hub.started());
  const std::string token = "hf_secret-token-1234";
  const test::ScopedEnv endpoint("HF_ENDPOINT", hub.url());
  const test::ScopedEnv hf_token("HF_TOKEN", token);
  test::LogLines log;
  for (const std::string& data :
       {std::string("hf://datasets/acme/flowers/data"),
        std::string("hf://datasets/acme/flowers@main/data/train-*.parquet")}) {
    Options o = jpeg_options(data);
    o.cache_dir = (dir.path() / "cache").string();
    o.log = log.sink();
    EXPECT_TRUE(deliver(o) == folder_batches()) << data;
  }
  // The test split: its own file.
  Options test_split = jpeg_options("hf://datasets/acme/flowers/data");
  test_split.split = Split::kTest;
  Loader loader(test_split);
  EXPECT_EQ(loader.dataset_size(), 96);
  // A name the Hub does not have: a ConfigError saying so.
  EXPECT_THROW(Loader(jpeg_options("hf://datasets/acme/nothing/data")), ConfigError);
  EXPECT_THROW(Loader(jpeg_options("hf://models/acme/flowers")), ConfigError);
  {
    // An endpoint without its scheme: refused, and no token goes anywhere in the clear.
    const test::ScopedEnv bare("HF_ENDPOINT", hub.url().substr(std::string("http://").size()));
    EXPECT_THROW(Loader(jpeg_options("hf://datasets/acme/flowers/data")), ConfigError);
  }
  cdn.stop();
  hub.stop();
  const std::string hub_log = test::read_file(dir.path() / "hub.log");
  const std::string cdn_log = test::read_file(dir.path() / "cdn.log");
  EXPECT_NE(hub_log.find("/api/page2 [Bearer " + token + "]"), std::string::npos) << hub_log;
  // Each loader lists the Hub once (not once for the index's key and again to index).
  std::size_t listings = 0;
  for (std::size_t at = 0; (at = hub_log.find("/api/page2 ", at)) != std::string::npos; ++at)
    ++listings;
  EXPECT_EQ(listings, 3u) << hub_log;
  EXPECT_NE(hub_log.find("/resolve/main/data/train-00001-of-00002.parquet [Bearer " + token),
            std::string::npos)
      << hub_log;
  EXPECT_NE(cdn_log.find("/files/data/train-00001-of-00002.parquet [-]"), std::string::npos)
      << cdn_log;
  EXPECT_EQ(cdn_log.find(token), std::string::npos) << cdn_log;
  for (const std::string& line : log.lines()) EXPECT_EQ(line.find(token), std::string::npos) << line;
}

// A file's facts, read from its bytes in memory (`bytes`, which must outlive the source).
detail::ParquetSource source_in(const std::string& name, const std::string& bytes) {
  return {name, bytes.size(), [&bytes](std::uint64_t offset, void* dst, std::size_t n) {
            const std::size_t got = std::min<std::size_t>(n, bytes.size() - offset);
            std::memcpy(dst, bytes.data() + offset, got);
            return got;
          }};
}

// The pages of a file's only row group, as the index finds them.
detail::ChunkPages pages_of(const std::string& file) {
  const std::string bytes = test::read_file(file);
  const detail::ParquetSource source = source_in(file, bytes);
  const detail::ReadAt& read_at = source.read_at;
  const detail::ParquetFileFacts facts = detail::read_parquet_facts(source, {});
  EXPECT_EQ(facts.row_groups.size(), 1u);
  detail::ChunkPages pages;
  const std::string why = detail::chunk_pages(read_at, facts.row_groups[0], pages);
  EXPECT_EQ(why, "");
  return pages;
}

// A damaged page is bad input for its rows alone: under skip each is replaced and named by file,
// row group and row; under error the first stops the loader, named so.
TEST(ParquetLoader, ADamagedPageSkipsItsRowsNamingFileRowGroupAndRow) {
  REQUIRE_WRITER("pyarrow");
  test::TempDir dir;
  const std::string file = write_parquet(dir, "bad.parquet", "pyarrow",
                                         "--compression snappy --no-dictionary --rows-per-page 8");
  const detail::ChunkPages pages = pages_of(file);
  ASSERT_EQ(pages.pages.size(), 12u);
  // Page 2 (rows 16..23): the start of its body (snappy's length) overwritten.
  const detail::ParquetPageLocation& p = pages.pages[2];
  ASSERT_EQ(p.first_row, 16);
  const std::string bytes = test::read_file(file);
  detail::PageHeader h;
  ASSERT_EQ(detail::parse_page_header(reinterpret_cast<const std::uint8_t*>(bytes.data()) + p.offset,
                                      p.size, h),
            detail::HeaderParse::kOk);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(p.offset + h.header_size));
    const std::string junk(8, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  test::LogLines log;
  Options o = jpeg_options(file);
  o.shuffle = false;
  o.log = log.sink();
  Loader loader(o);
  const test::Delivered d = test::collect(loader);
  EXPECT_EQ(loader.stats().skipped_by_reason.at("corrupt"), 8);
  for (int row = 16; row < 24; ++row)
    EXPECT_TRUE(log.contains("skipped " + file + " (sample " + std::to_string(row) +
                             ", row group 0, row " + std::to_string(row) + "): corrupt"))
        << row;
  // The rows of the other pages are the folder's.
  Options folder = jpeg_options(test::testdata("jpeg"));
  folder.shuffle = false;
  const test::Delivered clean = deliver(folder);
  const std::size_t sample = 32 * 32 * 3;
  for (std::size_t i = 0; i < 96; ++i) {
    if (i >= 16 && i < 24) continue;
    EXPECT_EQ(0, std::memcmp(d.pixels.data() + i * sample, clean.pixels.data() + i * sample,
                             sample))
        << i;
  }
  o.on_error = OnError::kError;
  o.log = [](std::string_view) {};
  Loader strict(o);
  try {
    test::collect(strict);
    FAIL() << "a damaged page was read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(file + " (sample 16, row group 0, row 16)"),
              std::string::npos)
        << e.what();
  }
}

// The forms of the data string: a folder in Hugging Face's layout (its split's files), brace
// ranges, globs and list files; none of them claims other data.
TEST(ParquetFiles, AFolderPatternsAndListsNameTheirFiles) {
  test::TempDir dir;
  const fs::path data = dir.path() / "hub/data";
  fs::create_directories(data);
  for (const char* name : {"train-00000-of-00002.parquet", "train-00001-of-00002.parquet",
                           "test-00000-of-00001.parquet"})
    std::ofstream(data / name) << "x";
  const std::string root = (dir.path() / "hub").string();
  using Files = std::vector<std::string>;
  EXPECT_EQ(detail::parquet_files(root, Split::kTrain),
            (Files{(data / "train-00000-of-00002.parquet").string(),
                   (data / "train-00001-of-00002.parquet").string()}));
  EXPECT_EQ(detail::parquet_files(root, Split::kTest),
            (Files{(data / "test-00000-of-00001.parquet").string()}));
  EXPECT_EQ(detail::parquet_files((data / "train-{00000..00001}-of-00002.parquet").string(),
                                  Split::kTrain),
            detail::parquet_files(root, Split::kTrain));
  EXPECT_EQ(detail::parquet_files((data / "train-*.parquet").string(), Split::kTrain),
            detail::parquet_files(root, Split::kTrain));
  std::ofstream(dir.path() / "list.txt") << "# the test split\nhub/data/test-00000-of-00001.parquet\n";
  EXPECT_EQ(detail::parquet_files((dir.path() / "list.txt").string(), Split::kTrain),
            (Files{(data / "test-00000-of-00001.parquet").string()}));
  // A folder whose files say no split: all of them. One of other splits only: an error.
  fs::create_directories(dir.path() / "plain/part");
  std::ofstream(dir.path() / "plain/b.parquet") << "x";
  std::ofstream(dir.path() / "plain/part/a.parquet") << "x";
  EXPECT_EQ(detail::parquet_files((dir.path() / "plain").string(), Split::kTest),
            (Files{(dir.path() / "plain/b.parquet").string(),
                   (dir.path() / "plain/part/a.parquet").string()}));
  // Files only in a folder Hugging Face does not keep them in (a class folder, say): not a
  // Parquet folder, whose look would otherwise walk a whole image tree.
  fs::create_directories(dir.path() / "tree/cat");
  std::ofstream(dir.path() / "tree/cat/x.parquet") << "x";
  EXPECT_FALSE(detail::parquet_files((dir.path() / "tree").string(), Split::kTrain));
  fs::create_directories(dir.path() / "validation-only");
  std::ofstream(dir.path() / "validation-only/validation-00000.parquet") << "x";
  try {
    detail::parquet_files((dir.path() / "validation-only").string(), Split::kTrain);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("of the splits validation, none of train"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(detail::parquet_files((data / "nothing-*.parquet").string(), Split::kTrain),
               ConfigError);
  // Other data is not Parquet.
  EXPECT_FALSE(detail::parquet_files(test::testdata("jpeg"), Split::kTrain));
  EXPECT_FALSE(detail::parquet_files("train-{000000..000003}.tar", Split::kTrain));
  EXPECT_FALSE(detail::parquet_files("http://host/train-000000.tar", Split::kTrain));
}

// A file that is not Parquet, or has no column images can be read from, is a ConfigError that
// names it (and the columns it has).
TEST(ParquetFiles, AFileThatCannotBeReadIsAConfigErrorNamingIt) {
  REQUIRE_WRITER("polars");
  test::TempDir dir;
  const std::string junk = (dir.path() / "junk.parquet").string();
  std::ofstream(junk) << "PAR1 not really";
  try {
    Loader loader(jpeg_options(junk));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(junk + ": not a Parquet file"), std::string::npos)
        << e.what();
  }
  const std::string numbers = (dir.path() / "numbers.parquet").string();
  run(std::string(STOKE_PARQUET_PYTHON) +
      " -c \"import polars as pl; pl.DataFrame({'a': [1, 2], 'b': ['x', 'y']}).write_parquet('" +
      numbers + "')\"");
  try {
    Loader loader(jpeg_options(numbers));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no column to read images from"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("a (INT64), b (BYTE_ARRAY)"), std::string::npos)
        << e.what();
  }
  Options o = jpeg_options(numbers);
  o.image_column = "c";
  EXPECT_THROW(Loader{o}, ConfigError);
  o = jpeg_options(test::testdata("jpeg"));
  o.label_column = "label";
  EXPECT_THROW(Loader{o}, ConfigError);  // (a folder has no columns)
}

// stoke-pack writes Parquet too: the folder's samples in its order, in Hugging Face's layout
// (datasets reads its Image and ClassLabel features back, every image byte for byte), each image
// a page of its own (a row read reads that image alone), and stoke reads the folder's batches.
TEST(StokePack, ParquetFilesHoldTheFolderAndDatasetsReadThemBack) {
  REQUIRE_WRITER("datasets");
  test::TempDir dir;
  run(std::string(STOKE_PACK) + " --no-progress --data " + test::testdata("jpeg") + " --out " +
      (dir.path() / "train-%05d.parquet").string() +
      " --shard-samples 40 --rows-per-group 10 --no-relayout > /dev/null");
  const std::string files = (dir.path() / "train-{00000..00002}.parquet").string();
  Loader loader(jpeg_options(files));
  EXPECT_EQ(loader.class_names().size(), 24u);
  EXPECT_TRUE(test::collect(loader) == folder_batches());
  const std::string first = (dir.path() / "train-00000.parquet").string();
  const std::string bytes = test::read_file(first);
  const detail::ParquetFileFacts facts = detail::read_parquet_facts(source_in(first, bytes), {});
  ASSERT_EQ(facts.row_groups.size(), 4u);
  for (const detail::ParquetChunkFacts& g : facts.row_groups) {
    EXPECT_EQ(g.codec, detail::ParquetCodec::kNone);
    EXPECT_EQ(g.pages.size(), static_cast<std::size_t>(g.rows));  // (the offset index's)
  }
  // `datasets` reads the features and every image's bytes as the folder holds them.
  const std::string check = (dir.path() / "check.py").string();
  std::ofstream(check) << "import hashlib, os, sys, datasets\n"
                          "root, files = sys.argv[1], sys.argv[2]\n"
                          "ds = datasets.load_dataset('parquet', data_files=files, split='train')\n"
                          "ds = ds.cast_column('image', datasets.Image(decode=False))\n"
                          "names = ds.features['label'].names\n"
                          "classes = sorted(d for d in os.listdir(root) if "
                          "os.path.isdir(os.path.join(root, d)))\n"
                          "assert names == classes, names\n"
                          "want = [open(os.path.join(root, c, f), 'rb').read() for c in classes "
                          "for f in sorted(os.listdir(os.path.join(root, c)))]\n"
                          "assert len(ds) == len(want) == 96, len(ds)\n"
                          "for row, data in zip(ds, want):\n"
                          "    assert row['image']['bytes'] == data\n"
                          "print('ok')\n";
  run("HF_DATASETS_CACHE=" + (dir.path() / "hf").string() + " " STOKE_PARQUET_PYTHON " " + check +
      " " + test::testdata("jpeg") + " '" + (dir.path() / "*.parquet").string() + "' > /dev/null");
}

// Parquet in (a datasets file, a third of its rows' images files of their own): packed as tar
// shards, and re-laid out as stoke's Parquet (an image a page), it gives the folder's batches and
// class names; a row that cannot be read is skipped, named by file, row group and row.
TEST(StokePack, ParquetInGoesToTarShardsAndToAnImageAPage) {
  REQUIRE_WRITER("datasets");
  test::TempDir dir;
  const std::string in =
      write_parquet(dir, "in.parquet", "datasets", "--image-files 3 --rows-per-group 30");
  run(std::string(STOKE_PACK) + " --no-progress --data " + in + " --out " +
      (dir.path() / "tar/s-%03d.tar").string() + " --shard-samples 32 > /dev/null");
  run(std::string(STOKE_PACK) + " --no-progress --data " + in + " --out " +
      (dir.path() / "pq/p-%02d.parquet").string() + " --rows-per-group 8 > /dev/null");
  for (const std::string& data : {(dir.path() / "tar/s-{000..002}.tar").string(),
                                  (dir.path() / "pq/p-00.parquet").string()}) {
    Loader loader(jpeg_options(data));
    EXPECT_TRUE(test::collect(loader) == folder_batches()) << data;
  }
  Loader relaid(jpeg_options((dir.path() / "pq/p-00.parquet").string()));
  EXPECT_EQ(relaid.class_names(), Loader(jpeg_options(in)).class_names());
  const std::string out = (dir.path() / "pq/p-00.parquet").string();
  const std::string bytes = test::read_file(out);
  const detail::ParquetFileFacts facts = detail::read_parquet_facts(source_in(out, bytes), {});
  ASSERT_EQ(facts.row_groups.size(), 12u);
  for (const detail::ParquetChunkFacts& g : facts.row_groups)
    EXPECT_EQ(g.pages.size(), static_cast<std::size_t>(g.rows));

  // Row 0's image file gone: skipped, named, the other 95 packed.
  ASSERT_TRUE(fs::remove(dir.path() / "images/c00-aqua/00000.jpg"));
  run(std::string(STOKE_PACK) + " --no-progress --data " + in + " --out " +
      (dir.path() / "again/s-%03d.tar").string() + " > " + (dir.path() / "said.txt").string() +
      " 2>&1");
  const std::string said = test::read_file(dir.path() / "said.txt");
  EXPECT_NE(said.find("skipped " + in + " (row group 0, row 0): missing"), std::string::npos)
      << said;
  EXPECT_NE(said.find("packed 95 samples"), std::string::npos) << said;
}

// A worker's reads: a row of a page it keeps decodes nothing; past its budget, the least recently
// used page goes first. And the budget the training process gives it follows the shuffle window.
TEST(ParquetRows, ARowOfAKeptPageDecodesNothingAndTheBudgetFollowsTheWindow) {
  REQUIRE_WRITER("pyarrow");
  test::TempDir dir;
  const std::string file = write_parquet(dir, "p.parquet", "pyarrow",
                                         "--no-dictionary --rows-per-page 8 --rows-per-group 48");
  detail::IndexOptions options;
  const detail::DatasetIndex index = detail::index_parquet({file}, options);
  ASSERT_EQ(index.parquet_pages.size(), 12u);
  const int fd = ::memfd_create("parquet-index", MFD_CLOEXEC);
  ASSERT_TRUE(detail::write_index_file(fd, index, "test"));
  const std::unique_ptr<detail::MappedIndex> mapped =
      detail::map_index_file(fd, "test", kDefaultMaxClasses, 0, "");
  ASSERT_NE(mapped, nullptr);
  const detail::DatasetView view = mapped->view();
  ASSERT_TRUE(view.parquet());
  detail::PosixFileReader files;
  const detail::ParquetRows::ReadRange read = [&](const detail::ByteRange& r,
                                                 std::vector<std::uint8_t>& into) {
    return files.read(file, r, into);
  };
  const std::string jpeg_prefix = "\xff\xd8";
  detail::ParquetRows rows(std::size_t{64} << 20);
  detail::ByteSpan span;
  for (std::int64_t i = 0; i < 96; ++i) {
    ASSERT_EQ(rows.read(view, i, detail::kParquetImage, read, span), BadInput::kNone) << i;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(span.data), 2), jpeg_prefix);
  }
  EXPECT_EQ(rows.pages_decoded(), 12u);
  ASSERT_EQ(rows.read(view, 3, detail::kParquetImage, read, span), BadInput::kNone);
  EXPECT_EQ(rows.pages_decoded(), 12u);  // kept
  // A budget of one byte keeps only the page being read.
  detail::ParquetRows tight(1);
  for (const std::int64_t i : {0, 1, 8, 9, 0})
    ASSERT_EQ(tight.read(view, i, detail::kParquetImage, read, span), BadInput::kNone);
  EXPECT_EQ(tight.pages_decoded(), 3u);
  // pyarrow's defaults: a row group's images in its dictionary page, indices in the data page. A
  // row of a kept data page reads neither again, though the budget let the dictionary go.
  const std::string dict = write_parquet(dir, "d.parquet", "pyarrow", "--rows-per-group 48");
  const detail::DatasetIndex dict_index = detail::index_parquet({dict}, options);
  const int dict_fd = ::memfd_create("parquet-index", MFD_CLOEXEC);
  ASSERT_TRUE(detail::write_index_file(dict_fd, dict_index, "test"));
  const std::unique_ptr<detail::MappedIndex> dict_mapped =
      detail::map_index_file(dict_fd, "test", kDefaultMaxClasses, 0, "");
  ASSERT_NE(dict_mapped, nullptr);
  const detail::DatasetView dict_view = dict_mapped->view();
  ASSERT_GT(dict_view.parquet_chunk(0).dictionary_size, 0u);
  const detail::ParquetRows::ReadRange read_dict = [&](const detail::ByteRange& r,
                                                      std::vector<std::uint8_t>& into) {
    return files.read(dict, r, into);
  };
  detail::ParquetRows one(1);
  ASSERT_EQ(one.read(dict_view, 5, detail::kParquetImage, read_dict, span), BadInput::kNone);
  ASSERT_EQ(one.read(dict_view, 6, detail::kParquetImage, read_dict, span), BadInput::kNone);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(span.data), 2), jpeg_prefix);
  EXPECT_EQ(one.pages_decoded(), 2u);  // the dictionary and the data page, once each
  // The budget: a quarter more than the window's row groups, within [32 MiB, 1 GiB].
  EXPECT_EQ(detail::page_cache_bytes(view, true, 0), detail::kMinPageCacheBytes);
  EXPECT_EQ(detail::page_cache_bytes(view, true, 4), detail::kMinPageCacheBytes);
  EXPECT_EQ(detail::page_cache_bytes(view, true, 1 << 20), detail::kMaxPageCacheBytes);
  std::uint64_t groups[2] = {0, 0};  // each row group's 6 pages
  for (std::uint64_t p = 0; p < 12; ++p) groups[p / 6] += view.parquet_page(p).size;
  EXPECT_EQ(detail::page_cache_bytes(view, true, 100),
            100 * std::max(groups[0], groups[1]) / 4 * 5);
}

// ---- the page reader on hostile bytes

std::vector<std::uint8_t> bytes_of(std::initializer_list<int> v) {
  std::vector<std::uint8_t> out;
  for (int b : v) out.push_back(static_cast<std::uint8_t>(b));
  return out;
}

// A V1 data page header: type 0, sizes, DataPageHeader{num_values, PLAIN, RLE, RLE}.
std::vector<std::uint8_t> data_page_header(int uncompressed, int compressed, int values) {
  const auto zigzag = [](std::int64_t v, std::vector<std::uint8_t>& out) {
    std::uint64_t z = static_cast<std::uint64_t>((v << 1) ^ (v >> 63));
    do {
      std::uint8_t b = z & 0x7f;
      z >>= 7;
      out.push_back(z != 0 ? static_cast<std::uint8_t>(b | 0x80) : b);
    } while (z != 0);
  };
  std::vector<std::uint8_t> h;
  h.push_back(0x15);  // field 1, i32
  zigzag(0, h);
  h.push_back(0x15);
  zigzag(uncompressed, h);
  h.push_back(0x15);
  zigzag(compressed, h);
  h.push_back(0x2c);  // field 5 (delta 2), struct
  h.push_back(0x15);
  zigzag(values, h);
  h.push_back(0x15);
  zigzag(0, h);  // PLAIN
  h.push_back(0x15);
  zigzag(3, h);  // RLE
  h.push_back(0x15);
  zigzag(3, h);
  h.push_back(0x00);
  h.push_back(0x00);
  return h;
}

TEST(ParquetPage, HeadersAreReadWithinTheirBytesAndBounds) {
  detail::PageHeader h;
  const std::vector<std::uint8_t> good = data_page_header(10, 10, 2);
  ASSERT_EQ(detail::parse_page_header(good.data(), good.size(), h), detail::HeaderParse::kOk);
  EXPECT_EQ(h.header_size, good.size());
  EXPECT_EQ(h.values, 2u);
  EXPECT_EQ(h.compressed_size, 10u);
  // Cut short: more may be read; a negative or absurd size: never a page.
  EXPECT_EQ(detail::parse_page_header(good.data(), good.size() - 3, h),
            detail::HeaderParse::kShort);
  const std::vector<std::uint8_t> negative = data_page_header(10, -1, 2);
  EXPECT_EQ(detail::parse_page_header(negative.data(), negative.size(), h),
            detail::HeaderParse::kBad);
  const std::vector<std::uint8_t> huge = data_page_header(std::int32_t{1} << 30 | 1, 10, 2);
  EXPECT_EQ(detail::parse_page_header(huge.data(), huge.size(), h), detail::HeaderParse::kBad);
  // Structs nested past the bound, a list that claims more elements than bytes.
  std::vector<std::uint8_t> deep = bytes_of({0x1c});  // field 1: a struct, ... 40 deep
  for (int i = 0; i < 40; ++i) deep.push_back(0x1c);
  EXPECT_EQ(detail::parse_page_header(deep.data(), deep.size(), h), detail::HeaderParse::kBad);
  const std::vector<std::uint8_t> list = bytes_of({0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f});
  EXPECT_NE(detail::parse_page_header(list.data(), list.size(), h), detail::HeaderParse::kOk);
}

TEST(ParquetPage, BodiesAreCheckedAgainstTheirHeadersBeforeTheyAreTrusted) {
  detail::PageValues values;
  const detail::ChunkLayout required{detail::ParquetCodec::kNone, 0};
  // Two PLAIN values: "ab" and "c".
  std::vector<std::uint8_t> body = bytes_of({2, 0, 0, 0, 'a', 'b', 1, 0, 0, 0, 'c'});
  auto page_of = [](const std::vector<std::uint8_t>& header, const std::vector<std::uint8_t>& b) {
    std::vector<std::uint8_t> page = header;
    page.insert(page.end(), b.begin(), b.end());
    return page;
  };
  std::vector<std::uint8_t> header = data_page_header(11, 11, 2);
  detail::PageHeader h;
  ASSERT_EQ(detail::parse_page_header(header.data(), header.size(), h), detail::HeaderParse::kOk);
  ASSERT_EQ(values.decode(h, page_of(header, body), header.size(), required, nullptr),
            BadInput::kNone);
  ASSERT_EQ(values.rows(), 2u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(values.row(0).data), values.row(0).size),
            "ab");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(values.row(1).data), values.row(1).size),
            "c");
  // A length past the page, a page shorter than its header says, three rows in two values' bytes.
  body[6] = 9;
  EXPECT_EQ(values.decode(h, page_of(header, body), header.size(), required, nullptr),
            BadInput::kCorrupt);
  body[6] = 1;
  std::vector<std::uint8_t> cut = page_of(header, body);
  cut.pop_back();
  EXPECT_EQ(values.decode(h, std::move(cut), header.size(), required, nullptr),
            BadInput::kCorrupt);
  header = data_page_header(11, 11, 3);
  ASSERT_EQ(detail::parse_page_header(header.data(), header.size(), h), detail::HeaderParse::kOk);
  EXPECT_EQ(values.decode(h, page_of(header, body), header.size(), required, nullptr),
            BadInput::kCorrupt);
  // More rows than a page may hold: refused before anything is allocated for them.
  header = data_page_header(11, 11, static_cast<int>(detail::kMaxPageRows) + 1);
  ASSERT_EQ(detail::parse_page_header(header.data(), header.size(), h), detail::HeaderParse::kOk);
  EXPECT_EQ(values.decode(h, page_of(header, body), header.size(), required, nullptr),
            BadInput::kTooLarge);
  // A snappy body whose own length disagrees with the header's: corrupt, nothing written past.
  header = data_page_header(11, 4, 2);
  ASSERT_EQ(detail::parse_page_header(header.data(), header.size(), h), detail::HeaderParse::kOk);
  EXPECT_EQ(values.decode(h, page_of(header, bytes_of({0x7f, 0, 'a', 'b'})), header.size(),
                          {detail::ParquetCodec::kSnappy, 0}, nullptr),
            BadInput::kCorrupt);
}

// A decompressed size is believed only when the compressed bytes can make it: snappy's and a zstd
// frame's own statements, else a ratio no image page nears; nothing is allocated before.
TEST(ParquetPage, ADecompressedSizeIsCheckedBeforeItIsAllocated) {
  const std::vector<std::uint8_t> junk(16, 0x11);
  EXPECT_FALSE(detail::plausible_size(detail::ParquetCodec::kGzip, junk.data(), junk.size(),
                                      std::size_t{1} << 30));
  EXPECT_TRUE(detail::plausible_size(detail::ParquetCodec::kGzip, junk.data(), junk.size(), 4096));
  const std::vector<std::uint8_t> snappy = bytes_of({0x0b, 0x28, 'h', 'e', 'l', 'l', 'o', ' ', 'w',
                                                     'o', 'r', 'l', 'd'});
  EXPECT_TRUE(detail::plausible_size(detail::ParquetCodec::kSnappy, snappy.data(), snappy.size(),
                                     11));
  EXPECT_FALSE(detail::plausible_size(detail::ParquetCodec::kSnappy, snappy.data(),
                                      snappy.size(), 12));
  std::vector<std::uint8_t> out(11);
  EXPECT_TRUE(detail::decompress_page(detail::ParquetCodec::kSnappy, snappy.data(), snappy.size(),
                                      out.data(), out.size()));
  EXPECT_EQ(std::string(out.begin(), out.end()), "hello world");
}

TEST(ParquetPage, LevelsAndIndicesRunNoFurtherThanTheirBytes) {
  std::uint32_t out[16];
  // A run of 5 threes (width 2), then one bit-packed group of 8: 0..7 at width 3.
  const std::vector<std::uint8_t> ok = bytes_of({10, 3});
  ASSERT_TRUE(detail::decode_hybrid(ok.data(), ok.size(), 2, 5, out));
  EXPECT_EQ(out[4], 3u);
  const std::vector<std::uint8_t> packed = bytes_of({3, 0x88, 0xc6, 0xfa});
  ASSERT_TRUE(detail::decode_hybrid(packed.data(), packed.size(), 3, 8, out));
  for (std::uint32_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], i);
  // A group that claims more bytes than there are, a run value wider than its width, width 33.
  const std::vector<std::uint8_t> long_group = bytes_of({0x7f, 1, 2});
  EXPECT_FALSE(detail::decode_hybrid(long_group.data(), long_group.size(), 8, 8, out));
  const std::vector<std::uint8_t> wide = bytes_of({2, 9});
  EXPECT_FALSE(detail::decode_hybrid(wide.data(), wide.size(), 3, 1, out));
  EXPECT_FALSE(detail::decode_hybrid(ok.data(), ok.size(), 33, 1, out));
  // Values wanted past the bytes.
  EXPECT_FALSE(detail::decode_hybrid(ok.data(), ok.size(), 2, 6, out));
}

}  // namespace
}  // namespace stoke
