# shellcheck shell=bash
# The exact Debian kernels bftrace is built and tested against.  Sourced by
# every script so that a kernel ABI bump is a one-line change here.
#   6.1:  uprobe API generation 1 (uprobe_register/uprobe_unregister)
#   6.12: uprobe API generation 2 (struct uprobe *, unregister_nosync/sync)
KVER_61=6.1.0-56-amd64
KVER_612=6.12.107+deb12-amd64
BFT_ALL_KERNELS="$KVER_61 $KVER_612"
export KVER_61 KVER_612 BFT_ALL_KERNELS
