"""GPU sharing as Alibaba's GPU trace records it (``sharing``): the resource model the out-of-tree
``kubesched-gpushare`` plugins schedule with and ``kubesched replay`` measures with. It is no part of
upstream's scheduler framework; plugins may import it as they import the framework."""
