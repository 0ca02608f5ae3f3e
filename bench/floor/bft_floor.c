// SPDX-License-Identifier: GPL-2.0
/*
 * bft_floor: the cost of a uprobe + uretprobe trap with nothing behind it.
 *
 * scripts/bench loads it with path= and offset= (a file offset, as in
 * uprobe_events) to put one consumer with both handlers on one function,
 * runs the target, reads the counters from /sys/module/bft_floor/parameters
 * to check that every call was seen, and unloads it.  The handlers only
 * count, per CPU, so two traced threads do not share a cache line: anything
 * a real tracer costs above this is its own doing.
 *
 * clock=N makes each handler also read one clock, as a tracer stamping its
 * events does, to price the clock alone (bench/guest-clock.sh):
 * 0 none, 1 ktime_get_ns(), 2 ktime_get_mono_fast_ns(), 3 local_clock().
 */
#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/namei.h>
#include <linux/percpu.h>
#include <linux/sched/clock.h>
#include <linux/timekeeping.h>
#include <linux/uprobes.h>

static char *floor_file;
module_param_named(path, floor_file, charp, 0444);
MODULE_PARM_DESC(path, "file holding the probed function");

static unsigned long floor_offset;
module_param_named(offset, floor_offset, ulong, 0444);
MODULE_PARM_DESC(offset, "file offset of the probed instruction");

static unsigned int floor_clock;
module_param_named(clock, floor_clock, uint, 0444);
MODULE_PARM_DESC(clock, "clock read per hit: 0 none, 1 ktime_get_ns, 2 ktime_get_mono_fast_ns, 3 local_clock");

static DEFINE_PER_CPU(unsigned long, floor_entries);
static DEFINE_PER_CPU(unsigned long, floor_returns);
/* where the clock readings go, so that they are not optimised away */
static DEFINE_PER_CPU(u64, floor_stamp);

static void floor_read_clock(void)
{
	switch (floor_clock) {
	case 1:
		this_cpu_write(floor_stamp, ktime_get_ns());
		break;
	case 2:
		this_cpu_write(floor_stamp, ktime_get_mono_fast_ns());
		break;
	case 3:
		this_cpu_write(floor_stamp, local_clock());
		break;
	}
}

static unsigned long floor_sum(unsigned long __percpu *counter)
{
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(counter, cpu);
	return sum;
}

static int floor_entries_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%lu\n", floor_sum(&floor_entries));
}

static int floor_returns_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%lu\n", floor_sum(&floor_returns));
}

static const struct kernel_param_ops floor_entries_ops = {
	.get = floor_entries_get,
};

static const struct kernel_param_ops floor_returns_ops = {
	.get = floor_returns_get,
};

module_param_cb(entries, &floor_entries_ops, NULL, 0444);
MODULE_PARM_DESC(entries, "entry hits so far (read only)");
module_param_cb(returns, &floor_returns_ops, NULL, 0444);
MODULE_PARM_DESC(returns, "return hits so far (read only)");

#if FLOOR_UPROBE_API >= 3
static int floor_entry(struct uprobe_consumer *uc, struct pt_regs *regs,
		       __u64 *data)
#else
static int floor_entry(struct uprobe_consumer *uc, struct pt_regs *regs)
#endif
{
	floor_read_clock();
	this_cpu_inc(floor_entries);
	return 0;
}

#if FLOOR_UPROBE_API >= 3
static int floor_return(struct uprobe_consumer *uc, unsigned long func,
			struct pt_regs *regs, __u64 *data)
#else
static int floor_return(struct uprobe_consumer *uc, unsigned long func,
			struct pt_regs *regs)
#endif
{
	floor_read_clock();
	this_cpu_inc(floor_returns);
	return 0;
}

/* No filter: every process that maps the file is traced, as in the bench. */
static struct uprobe_consumer floor_consumer = {
	.handler = floor_entry,
	.ret_handler = floor_return,
};

/* Pins the dentry and the mount, and so the inode the probe lives on. */
static struct path floor_path;
#if FLOOR_UPROBE_API >= 2
static struct uprobe *floor_uprobe;
#endif

static int floor_register(struct inode *inode)
{
#if FLOOR_UPROBE_API >= 2
	floor_uprobe = uprobe_register(inode, floor_offset, 0, &floor_consumer);
	return PTR_ERR_OR_ZERO(floor_uprobe);
#else
	return uprobe_register(inode, floor_offset, &floor_consumer);
#endif
}

static int __init floor_init(void)
{
	int err;

	if (floor_clock > 3) {
		pr_err("bft_floor: clock=%u: 0 to 3\n", floor_clock);
		return -EINVAL;
	}
	if (!floor_file || !*floor_file) {
		pr_err("bft_floor: give path=FILE offset=N\n");
		return -EINVAL;
	}
	err = kern_path(floor_file, LOOKUP_FOLLOW, &floor_path);
	if (err) {
		pr_err("bft_floor: %s: error %d\n", floor_file, err);
		return err;
	}
	if (!d_is_reg(floor_path.dentry)) {
		pr_err("bft_floor: %s is not a regular file\n", floor_file);
		err = -EINVAL;
		goto out_put;
	}
	err = floor_register(d_real_inode(floor_path.dentry));
	if (err) {
		pr_err("bft_floor: cannot probe %s at %#lx: error %d\n",
		       floor_file, floor_offset, err);
		goto out_put;
	}
	return 0;

out_put:
	path_put(&floor_path);
	return err;
}

static void __exit floor_exit(void)
{
#if FLOOR_UPROBE_API >= 2
	uprobe_unregister_nosync(floor_uprobe, &floor_consumer);
	uprobe_unregister_sync();
#else
	uprobe_unregister(d_real_inode(floor_path.dentry), floor_offset,
			  &floor_consumer);
#endif
	path_put(&floor_path);
}

module_init(floor_init);
module_exit(floor_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("bftrace bench floor: a uprobe+uretprobe that only counts");
