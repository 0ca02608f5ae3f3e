/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_maps: the ELF objects a running process executes, from /proc/N/maps.
 *
 * Every file with at least one executable mapping is one object, whatever
 * its name says: the executable, shared libraries, dlopen()ed plugins, and
 * files that were deleted or replaced after they were mapped.  Anonymous
 * and pseudo mappings ([vdso], [stack], ...) are not objects.
 *
 * The path in maps is the target's view.  Inside a container, or for a
 * deleted file, this process cannot open it by that name, so each object
 * also gets the path through which this process reaches the very same
 * file (same device and inode as maps reports), tried in this order:
 *   the plain path (same root directory as the target's),
 *   /proc/N/root/<path> (another mount namespace or chroot),
 *   /proc/N/map_files/<start>-<end> (deleted files; needs CAP_SYS_ADMIN).
 * Only when none of them is the same file does open_path fall back to the
 * best guess, and verified says so.
 */
#ifndef BFT_MAPS_H
#define BFT_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bft_map_obj {
	char *path;		/* as in maps, without " (deleted)" */
	char *open_path;	/* how this process opens the same file */
	uint64_t start;		/* the lowest address mapped from it */
	uint64_t exec_start;	/* its first executable mapping */
	uint64_t exec_end;
	uint64_t dev;		/* makedev(major, minor) from maps */
	uint64_t ino;
	bool deleted;
	bool verified;		/* open_path is known to be the mapped file */
};

struct bft_maps {
	pid_t pid;
	bool same_root;		/* the target's / is ours */
	struct bft_map_obj *obj;
	size_t n;
};

/*
 * Read /proc/pid/maps.  Objects come in address order of their first
 * mapping (the executable first, normally).
 *   -ESRCH   no such process, or it exited, or it maps no file (kernel
 *            thread, zombie)
 *   -EACCES  /proc/pid/maps is not readable (another user's process, or
 *            no CAP_SYS_PTRACE)
 *   -ENOMEM
 * err (may be NULL) receives the reason.
 */
int bft_maps_read(pid_t pid, struct bft_maps *m, char *err, size_t errlen);
void bft_maps_free(struct bft_maps *m);

/* The object with an executable mapping containing addr, or NULL. */
const struct bft_map_obj *bft_maps_find_addr(const struct bft_maps *m,
					     uint64_t addr);
/* The object whose lowest mapping starts at addr (a load base), or NULL. */
const struct bft_map_obj *bft_maps_find_base(const struct bft_maps *m,
					     uint64_t addr);

#endif /* BFT_MAPS_H */
