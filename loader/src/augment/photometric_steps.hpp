#pragma once
// What a photometric, policy or random_affine step does to one sample: the ops it applies, drawn
// from the sample's generator as torchvision's transform classes draw them (ColorJitter's random
// order and factors, GaussianBlur's sigma, the random_* steps' coin, the policies: policies.hpp,
// RandomAffine's angle, translation, scale and shears). Drawing
// depends on the step and the generator only, never on the pixels, so the augmenter can look ahead
// at the draws of later steps (its direct JPEG write decides the final flip before they run).
//
// Thread-safety: functions of their arguments.

#include <vector>

#include "augment/augment_step.hpp"
#include "augment/photometric.hpp"
#include "plan/sample_rng.hpp"

namespace stoke::detail {

// Appends the ops `step` applies to this sample of height x width (the translations of the
// policies and of random_affine depend on it), in the order they apply (none when its coin says
// no). REQUIRES: works_in_place(step.step_kind()).
void draw_pixel_ops(const AugmentStep& step, SampleRng& rng, int height, int width,
                    std::vector<ColorOpArgs>& out);

}  // namespace stoke::detail
