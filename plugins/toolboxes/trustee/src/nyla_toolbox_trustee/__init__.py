"""The trustee toolbox: queryFeatureInstance over the trustee feature's data agent."""
