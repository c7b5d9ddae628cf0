"""The list options of the scheduler's informers (``pkg/scheduler/scheduler.go``): every kind is
listed and watched whole, except pods, whose informer (``newPodInformer``) never lists or watches
a pod that has finished; a pod that succeeds or fails leaves the scheduler's cache as if deleted."""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.fields import parse_field_selector, predicate

# newPodInformer's field selector: what the API server filters the scheduler's pod watch by
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
FIELD_SELECTORS: Mapping[str, str] = {"Pod": POD_FIELD_SELECTOR}
# whether the scheduler's pod informer holds a pod (its lister finds it): not once it has finished
informed_pod = predicate(parse_field_selector(POD_FIELD_SELECTOR, "Pod"))
