// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: sysfs attributes of /sys/class/fpgacomm/fpgacommN, which sits
 * under its PCI device. All but link_state were read at probe. The device
 * is deleted before the registers are unmapped, so reading link_state
 * never touches a board that is gone.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "fc.h"

#define FC_ATTR_HEX(name, field)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "0x%08x\n", to_fc_dev(dev)->field);	\
}									\
static DEVICE_ATTR_RO(name)

FC_ATTR_HEX(id, id);
FC_ATTR_HEX(version, version);
FC_ATTR_HEX(caps, caps);

static ssize_t node_id_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", to_fc_dev(dev)->node_id);
}
static DEVICE_ATTR_RO(node_id);

static ssize_t numa_node_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", dev_to_node(&to_fc_dev(dev)->pdev->dev));
}
static DEVICE_ATTR_RO(numa_node);

static ssize_t link_state_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%08x\n",
			  fc_rd32(to_fc_dev(dev), FC_REG_LINK_STATE));
}
static DEVICE_ATTR_RO(link_state);

static ssize_t irq_mode_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", fc_irq_mode_name(to_fc_dev(dev)->irq_mode));
}
static DEVICE_ATTR_RO(irq_mode);

/* ok, resetting, failed, suspended, off or removed (fc_reset.c). */
static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%s\n", fc_state_name(to_fc_dev(dev)));
}
static DEVICE_ATTR_RO(state);

static struct attribute *fc_attrs[] = {
	&dev_attr_id.attr,
	&dev_attr_version.attr,
	&dev_attr_caps.attr,
	&dev_attr_node_id.attr,
	&dev_attr_numa_node.attr,
	&dev_attr_link_state.attr,
	&dev_attr_irq_mode.attr,
	&dev_attr_state.attr,
	NULL,
};

static const struct attribute_group fc_group = {
	.attrs = fc_attrs,
};

const struct attribute_group *fc_groups[] = {
	&fc_group,
	NULL,
};
