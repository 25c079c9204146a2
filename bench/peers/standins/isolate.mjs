import { standIn } from './standin.mjs';

standIn('isolate');
