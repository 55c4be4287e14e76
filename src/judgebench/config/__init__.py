"""Where the packaged Hydra configs are and the OmegaConf resolvers they use."""
