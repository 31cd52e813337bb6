module agentprof/pprofsvc

go 1.19
