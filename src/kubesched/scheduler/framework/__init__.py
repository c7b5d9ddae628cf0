"""The framework runtime (upstream ``pkg/scheduler/framework/runtime``): runs a profile's plugins
at each extension point. The interfaces plugins implement are public, in ``kubesched.framework``."""
