#include "ipc/spsc_ring.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <new>

namespace stoke::detail {
namespace {

TEST(SpscRing, KeepsOrderAndReportsFullAndEmpty) {
  SpscRing<std::uint64_t, 8> ring;
  std::uint64_t v = 0;
  EXPECT_FALSE(ring.pop(v));
  for (std::uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(ring.push(i));
  EXPECT_FALSE(ring.push(99));
  for (std::uint64_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(ring.pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(ring.pop(v));
}

TEST(SpscRing, CarriesItemsBetweenProcessesInOrder) {
  using Ring = SpscRing<std::uint64_t, 64>;
  void* mem =
      ::mmap(nullptr, sizeof(Ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* ring = new (mem) Ring();
  constexpr std::uint64_t kItems = 200000;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (std::uint64_t i = 0; i < kItems; ++i) {
      while (!ring->push(i)) {
      }
    }
    ::_exit(0);
  }
  std::uint64_t expected = 0, v = 0;
  while (expected < kItems) {
    if (ring->pop(v)) {
      ASSERT_EQ(v, expected);
      ++expected;
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::munmap(mem, sizeof(Ring));
}

}  // namespace
}  // namespace stoke::detail
