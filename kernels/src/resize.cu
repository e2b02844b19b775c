// GPU resize: blockIdx.y walks the images, and each image's blocks stride over its output
// pixels, one thread per pixel (all channels). Each thread works out its row's and column's taps
// itself (resize_taps.hpp, the CPU reference's operations in its order), so no table is built
// or allocated.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "cuda_check.hpp"
#include "resize_taps.hpp"
#include "stoke/kernels/resize.hpp"
#include "stoke/kernels/resize_cuda.hpp"

namespace stoke::kernels {
namespace {

constexpr int kResizeThreads = 256;
// Images per launch: their records travel in the launch's parameters (under the 4 KiB every
// GPU takes), so the caller's host array needs no copy to the device and no lifetime beyond
// the call.
constexpr int kImagesPerLaunch = 52;

struct LaunchImages {
  ResizeImage images[kImagesPerLaunch];
};
static_assert(sizeof(LaunchImages) + 64 <= 4096);

__global__ void __launch_bounds__(kResizeThreads)
    resize_kernel(const LaunchImages jobs, int images, int height, int width, int channels,
                  std::uint8_t* __restrict__ dst) {
  const unsigned pixels = static_cast<unsigned>(height) * static_cast<unsigned>(width);
  for (unsigned n = blockIdx.y; n < static_cast<unsigned>(images); n += gridDim.y) {
    const ResizeImage& m = jobs.images[n];
    const bool area = detail::resize_by_area(m, height, width);
    const bool padded = detail::resize_padded(m);
    std::uint8_t* out = dst + static_cast<std::size_t>(m.out_index) * pixels * channels;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < pixels;
         i += gridDim.x * blockDim.x) {
      const int oy = static_cast<int>(i / static_cast<unsigned>(width));
      const int ox = static_cast<int>(i - static_cast<unsigned>(oy) * static_cast<unsigned>(width));
      const detail::Taps tx = detail::resize_taps(m.x, m.w, width, m.image_width, m.region_x,
                                                  m.region_x + m.region_width,
                                                  m.mirror_x ? width - 1 - ox : ox, area, padded);
      const detail::Taps ty = detail::resize_taps(m.y, m.h, height, m.image_height, m.region_y,
                                                  m.region_y + m.region_height,
                                                  m.mirror_y ? height - 1 - oy : oy, area, padded);
      for (int c = 0; c < channels; ++c)
        out[static_cast<std::size_t>(i) * channels + c] =
            detail::resize_pixel(m, tx, ty, channels, c);
    }
  }
}

}  // namespace

void resize_cuda(const ResizeParams& p, std::uint8_t* d_dst, cudaStream_t stream) {
  validate(p);
  const unsigned pixels = static_cast<unsigned>(p.height) * static_cast<unsigned>(p.width);
  const unsigned blocks_x = std::min((pixels + kResizeThreads - 1) / kResizeThreads, 1024u);
  for (int first = 0; first < p.images; first += kImagesPerLaunch) {
    const int n = std::min(kImagesPerLaunch, p.images - first);
    LaunchImages jobs{};
    std::copy(p.jobs + first, p.jobs + first + n, jobs.images);
    resize_kernel<<<dim3(blocks_x, static_cast<unsigned>(n)), kResizeThreads, 0, stream>>>(
        jobs, n, p.height, p.width, p.channels, d_dst);
    CUDA_CALL(cudaGetLastError());
  }
}

}  // namespace stoke::kernels
