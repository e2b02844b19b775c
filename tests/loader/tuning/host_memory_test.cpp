// The memory figures that bound the worker pool, read from this very process and machine.

#include "tuning/host_memory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

namespace stoke {
namespace {

TEST(HostMemory, ThisProcessHasPrivateMemoryAndItGrowsWithAnAllocation) {
  const std::int64_t before = detail::anon_rss_bytes(::getpid());
  ASSERT_GT(before, 0);
  std::vector<char> block(std::size_t{64} << 20, 1);  // touched: resident
  const std::int64_t after = detail::anon_rss_bytes(::getpid());
  EXPECT_GE(after - before, std::int64_t{60} << 20);
  EXPECT_NE(block[block.size() / 2], 0);
}

TEST(HostMemory, AProcessThatDoesNotExistHasNoFigure) {
  EXPECT_EQ(detail::anon_rss_bytes(-1), -1);
}

TEST(HostMemory, AvailableMemoryIsPositiveAndNoMoreThanTheMachineHas) {
  const std::int64_t available = detail::available_memory_bytes();
  ASSERT_GT(available, 0);
  EXPECT_LE(available,
            static_cast<std::int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE));
}

}  // namespace
}  // namespace stoke
