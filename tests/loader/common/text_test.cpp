// What messages may show of a name stoke did not choose: printable() and redact_url().
#include "common/text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "consumer/event_log.hpp"
#include "data/shard_list.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

TEST(Printable, ControlCharactersAndTerminalEscapesBecomeVisibleEscapes) {
  // A member name that would otherwise print a forged red "stoke:" line.
  const std::string name = "a\n\x1b[31mstoke: error\x1b[0m.jpg";
  EXPECT_EQ(printable(name), "a\\n\\x1b[31mstoke: error\\x1b[0m.jpg");
  EXPECT_EQ(printable(std::string("t\tr\rdel\x7fnul\0.", 13)), "t\\tr\\rdel\\x7fnul\\x00.");
}

TEST(Printable, UnicodeNamesStayAndBrokenUtf8AndC1ControlsAreEscaped) {
  EXPECT_EQ(printable("caf\xc3\xa9/\xe7\x8c\xab.jpg"), "caf\xc3\xa9/\xe7\x8c\xab.jpg");
  EXPECT_EQ(printable("x\xc2\x9b"
                      "31m"),
            "x\\xc2\\x9b31m");                              // U+009B, CSI
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");           // not UTF-8; cut short
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

TEST(RedactUrl, UserinfoAndSignaturesAreHidden) {
  EXPECT_EQ(redact_url("https://alice:s3cret@example.com/a.tar"), "https://***@example.com/a.tar");
  EXPECT_EQ(redact_url("http://token@host:8080/x?y=1"), "http://***@host:8080/x?y=1");
  EXPECT_EQ(redact_url("https://b.s3.amazonaws.com/k.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                       "&X-Amz-Credential=AKIA%2F&X-Amz-Signature=abcdef&x-id=GetObject"),
            "https://b.s3.amazonaws.com/k.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x-id=GetObject");
  // '@' in the path is not userinfo; names that are not URLs are only made printable.
  EXPECT_EQ(redact_url("https://host/a@b.tar"), "https://host/a@b.tar");
  EXPECT_EQ(redact_url("s3://bkt/k\n.tar"), "s3://bkt/k\\n.tar");
  EXPECT_EQ(redact_url("/data/train-000000.tar"), "/data/train-000000.tar");
}

TEST(Printable, NoErrorOrLogLineCanForgeAnotherLine) {
  const std::string name = "s-000000.tar:evil\n\x1b[31mstoke: all good\x1b[0m.jpg";
  const DataError e("cannot decode " + name);
  EXPECT_STREQ(e.what(), "cannot decode s-000000.tar:evil\\n\\x1b[31mstoke: all good\\x1b[0m.jpg");
  std::vector<std::string> lines;
  EventLog log([&](std::string_view line) { lines.emplace_back(line); });
  log.post("skipped " + name);
  log.flush();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "skipped s-000000.tar:evil\\n\\x1b[31mstoke: all good\\x1b[0m.jpg");
}

// A shard pattern is shown by its errors as a URL: without its password.
TEST(RedactUrl, ShardPatternErrorsHideThePassword) {
  try {
    shard_list("http://alice:s3cret@127.0.0.1:1/train-{0..3.tar");
    FAIL() << "an unmatched brace was accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "http://***@127.0.0.1:1/train-{0..3.tar: '{' without a matching '}'");
  }
}

}  // namespace
}  // namespace stoke::detail
