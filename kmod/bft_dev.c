// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/bftrace: a file is bound to one CPU's ring, then read() and poll()
 * drain it.  Binding is exclusive, so a ring's tail has one owner.
 */
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "bft_internal.h"

struct bft_file {
	struct bft_ring *ring;		/* NULL until BFT_IOC_BIND_CPU */
};

/*
 * The rings hold every target's calls, and binding allocates them: the
 * opener needs what a netlink socket's sender needs, whatever the file's
 * mode says.  A descriptor passed on keeps its opener's credentials, which
 * the ioctls check again with the caller's.
 */
static int bft_dev_open(struct inode *inode, struct file *file)
{
	struct bft_file *bf;

	if (!bft_file_capable(file))
		return -EPERM;
	bf = kzalloc(sizeof(*bf), GFP_KERNEL);
	if (!bf)
		return -ENOMEM;
	file->private_data = bf;
	return nonseekable_open(inode, file);
}

static int bft_dev_release(struct inode *inode, struct file *file)
{
	struct bft_file *bf = file->private_data;

	if (bf->ring)
		atomic_set(&bf->ring->bound, 0);
	kfree(bf);
	return 0;
}

static long bft_dev_bind(struct bft_file *bf, u32 __user *arg)
{
	struct bft_ring *r;
	u32 cpu;
	int err;

	if (get_user(cpu, arg))
		return -EFAULT;
	if (bf->ring)
		return -EALREADY;
	if (cpu >= nr_cpu_ids || !cpu_possible(cpu))
		return -ENODEV;
	/* a reader may come before any session: the rings it reads */
	mutex_lock(&bft_lock);
	err = bft_session_prepare(NULL);
	mutex_unlock(&bft_lock);
	if (err)
		return err;
	r = bft_ring_get(cpu);
	if (atomic_cmpxchg(&r->bound, 0, 1))
		return -EBUSY;
	bf->ring = r;
	return 0;
}

/*
 * GET_STATUS for a sampler: the counters ask ten times a second, and a
 * netlink round trip (two system calls, a message built and parsed) was
 * most of their cost.  Whoever opened the file and whoever asks must both
 * be privileged, as bft_capable() has it for a socket.
 */
static long bft_dev_status(struct file *file, struct bft_ioc_status __user *arg)
{
	struct bft_ioc_cpu_stats *cs = NULL;
	struct bft_ring_stats st;
	struct bft_ioc_status s;
	unsigned int cpu;
	u32 n = 0, want;
	int err = 0;

	if (!bft_file_capable(file))
		return -EPERM;
	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;
	if (s.pad)
		return -EINVAL;
	/* filled under the lock, copied out after it: no fault inside it */
	want = min_t(u32, s.nr_cpus, num_possible_cpus());
	if (want) {
		cs = kcalloc(want, sizeof(*cs), GFP_KERNEL_ACCOUNT);
		if (!cs)
			return -ENOMEM;
	}
	mutex_lock(&bft_lock);
	s.mode = bft_mode;
	s.nr_probes = bft_nr_probes;
	s.nr_targets = bft_nr_targets;
	s.owner = bft_session_owner();
	for_each_possible_cpu(cpu) {
		if (n < want) {
			bft_ring_stats(cpu, &st);
			cs[n].cpu = cpu;
			cs[n].used = st.used;
			cs[n].size = st.size;
			cs[n].produced = st.produced;
			cs[n].written = st.written;
			cs[n].lost = st.lost;
			cs[n].suspended = st.suspended;
			cs[n].bytes_written = st.bytes_written;
			cs[n].bytes_read = st.bytes_read;
		}
		n++;
	}
	mutex_unlock(&bft_lock);
	s.nr_cpus = n;
	if ((want && copy_to_user(u64_to_user_ptr(s.cpus), cs,
				  want * sizeof(*cs))) ||
	    copy_to_user(arg, &s, sizeof(s)))
		err = -EFAULT;
	kfree(cs);
	return err;
}

static long bft_dev_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	switch (cmd) {
	case BFT_IOC_BIND_CPU:
		return bft_dev_bind(file->private_data, (u32 __user *)arg);
	case BFT_IOC_STATUS:
		return bft_dev_status(file, (struct bft_ioc_status __user *)arg);
	default:
		return -ENOTTY;
	}
}

static ssize_t bft_dev_read(struct file *file, char __user *buf,
			    size_t count, loff_t *ppos)
{
	struct bft_file *bf = file->private_data;

	if (!bf->ring)
		return -EBADFD;
	return bft_ring_read(bf->ring, buf, count, file->f_flags & O_NONBLOCK);
}

static __poll_t bft_dev_poll(struct file *file, struct poll_table_struct *pt)
{
	struct bft_file *bf = file->private_data;

	if (!bf->ring)
		return EPOLLERR;
	return bft_ring_poll(bf->ring, file, pt);
}

static const struct file_operations bft_dev_fops = {
	.owner = THIS_MODULE,
	.open = bft_dev_open,
	.release = bft_dev_release,
	.read = bft_dev_read,
	.poll = bft_dev_poll,
	.unlocked_ioctl = bft_dev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice bft_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = BFT_DEV_NAME,
	.fops = &bft_dev_fops,
	.mode = 0600,
};

int bft_dev_init(void)
{
	return misc_register(&bft_miscdev);
}

void bft_dev_exit(void)
{
	misc_deregister(&bft_miscdev);
}
