/* SPDX-License-Identifier: GPL-2.0 */
#ifndef BFTGT_LIB_H
#define BFTGT_LIB_H

int bftgt_scale(int x);

#endif /* BFTGT_LIB_H */
