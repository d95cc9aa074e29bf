"""The spine every study shares: configs, run store, sweeps, claims, report, device and RNG."""
