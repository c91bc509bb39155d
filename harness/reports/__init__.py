"""What a run or a store is drawn as: Jepsen's plots, the timeline page, trends, the results summary."""
