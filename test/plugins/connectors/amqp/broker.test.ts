/**
 * Every test that talks to RabbitMQ, in one file so they run one after the other: the restart
 * test stops the broker, which would break any other broker test running at that moment.
 */
import './consume.cases.ts';
import './publish.cases.ts';
import './shutdown.cases.ts';
import './restart.cases.ts';
