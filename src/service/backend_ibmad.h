/* SPDX-License-Identifier: BSD-3-Clause */
// PortInfo width fields (IBA vol. 1, 14.2.5.6), for the ibmad backend and its
// tests. Pure byte work, independent of libibmad, so the encoding can be
// checked against libibmad's own mad_encode_field/mad_decode_field.
#pragma once

#include <cstdint>

namespace slim::link::ib {

// Byte offsets inside the 64-byte PortInfo attribute (SMP data).
constexpr unsigned kPortInfoSize           = 64;
constexpr unsigned kLinkWidthEnabledByte   = 29;
constexpr unsigned kLinkWidthSupportedByte = 30;
constexpr unsigned kLinkWidthActiveByte    = 31;
// LinkWidthEnabled specials: 0 = no state change, 255 = as supported.
constexpr std::uint8_t kWidthNoChange    = 0;
constexpr std::uint8_t kWidthAsSupported = 255;

// Width bit of 1x, 2x, 4x, 8x, 12x (1, 16, 2, 4, 8); 0 for other widths.
std::uint8_t width_bit(unsigned lanes);
// Widest width whose bit is set in `mask` (0 when none).
unsigned widest(std::uint8_t mask);

void set_link_width_enabled(std::uint8_t *portinfo, std::uint8_t value);
std::uint8_t link_width_enabled(const std::uint8_t *portinfo);
std::uint8_t link_width_supported(const std::uint8_t *portinfo);
std::uint8_t link_width_active(const std::uint8_t *portinfo);

}  // namespace slim::link::ib
